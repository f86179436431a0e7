//go:build conformance

package diagnostics

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/cobranca/cobranca/internal/mcpapi"
)

// templatePrefix and templateSuffix frame the id of the suite's template
// test://template/{id}/data.
const templatePrefix, templateSuffix = "test://template/", "/data"

// Resources are the suite's resource fixtures (resources-read-text,
// resources-read-binary, resources-templates-read), read under Scope.
func Resources() []mcpapi.Resource {
	return []mcpapi.Resource{
		{URI: "test://static-text", Name: "static-text", MIMEType: "text/plain", Scope: Scope,
			Read: func(string) (string, []byte, error) {
				return "This is the content of the static text resource.", nil, nil
			}},
		{URI: "test://static-binary", Name: "static-binary", MIMEType: "image/png", Scope: Scope,
			Read: func(string) (string, []byte, error) { return "", redPixel, nil }},
		{URI: templatePrefix + "{id}" + templateSuffix, Template: true, Name: "template-data", MIMEType: "application/json", Scope: Scope,
			Read: templateData},
	}
}

// templateData answers test://template/{id}/data for an id of one path
// segment.
func templateData(uri string) (string, []byte, error) {
	id, ok := strings.CutPrefix(uri, templatePrefix)
	id, ok2 := strings.CutSuffix(id, templateSuffix)
	if !ok || !ok2 || id == "" || strings.Contains(id, "/") {
		return "", nil, errors.New("diagnostics: not a URI of the template test://template/{id}/data")
	}
	b, err := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
	return string(b), nil, err
}
