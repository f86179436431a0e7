package web

import (
	"io/fs"
	"testing"
)

// TestTemplatesParse parses every page's template, which the process does only when a page
// first needs it: a template that does not parse fails here, not in front of a person.
func TestTemplatesParse(t *testing.T) {
	if pageTemplate().Lookup("page") == nil {
		t.Fatal(`the layout defines no "page"`)
	}
	files, err := fs.Glob(consoleHTML, "console_*.html")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 || len(files) != len(consoleTemplates) {
		t.Fatalf("%d console files, %d console templates", len(files), len(consoleTemplates))
	}
	for _, f := range files {
		tm := consoleTemplates[f]()
		if tm.Lookup("page") == nil || tm.Lookup("content") == nil {
			t.Errorf("%s: the page misses its layout or its content (templates %s)", f, tm.DefinedTemplates())
		}
	}
}
