// Package authservertest reads the development authorization server's sign-in page as a
// browser does, for tests that sign in through it without a browser.
package authservertest

import (
	"errors"
	"html"
	"net/url"
	"regexp"
)

var (
	inputRE = regexp.MustCompile(`<input ([^>]*)>`)
	attrRE  = regexp.MustCompile(`([\w-]+)(?:="([^"]*)")?`)
	formRE  = regexp.MustCompile(`<form method="post" action="([^"]*)">`)
)

// ParseForm reads the first form of page as a browser submits it: its action, and every
// input's value, checkboxes and radio buttons only when checked, buttons left out (the caller
// adds the one it presses).
func ParseForm(page string) (action string, values url.Values, err error) {
	m := formRE.FindStringSubmatch(page)
	if m == nil {
		return "", nil, errors.New("authservertest: no form on the page")
	}
	values = url.Values{}
	for _, in := range inputRE.FindAllStringSubmatch(page, -1) {
		attrs := map[string]string{}
		for _, a := range attrRE.FindAllStringSubmatch(in[1], -1) {
			attrs[a[1]] = html.UnescapeString(a[2])
		}
		_, checked := attrs["checked"]
		if name := attrs["name"]; name != "" && (attrs["type"] != "checkbox" && attrs["type"] != "radio" || checked) {
			values.Add(name, attrs["value"])
		}
	}
	return html.UnescapeString(m[1]), values, nil
}
