package server_test

import (
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// TestRoutesNameNoTool: the routes and the pages are told which tool the admin write-off runs
// (Deps.WriteOffTool, web.Config.WriteOffTool); they import none of the tools' packages.
func TestRoutesNameNoTool(t *testing.T) {
	for _, pkg := range []string{"github.com/cobranca/cobranca/internal/server", "github.com/cobranca/cobranca/internal/web"} {
		for _, d := range deptest.NonStd(t, pkg) {
			if strings.HasPrefix(d, "github.com/cobranca/cobranca/internal/collections") {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
}
