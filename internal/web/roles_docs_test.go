package web_test

import (
	"bytes"
	"image"
	_ "image/png" // the screenshots' format
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/web"
)

// The docs, from this package's folder.
const (
	rolesDir  = "../../docs/roles"
	shotsDir  = "../../docs/img/console"
	consoleMD = "../../docs/console.md"
	readmeMD  = "../../README.md"
	// shotsBudget bounds what the committed screenshots weigh together.
	shotsBudget = 1536 << 10
)

// rolePage is the page of role in docs/roles: collections.write_off's is write-off.md.
func rolePage(role string) string {
	return strings.ReplaceAll(strings.TrimPrefix(role, "collections."), "_", "-") + ".md"
}

var imageRE = regexp.MustCompile(`!\[([^\]]*)\]\(([^)\s]+)\)`)

// TestRolePages (issue 29): every console role (web.Roles) has its page in docs/roles, which
// names the role and is linked from docs/console.md and the README; every image a role page
// shows is there, a PNG of the browser tests' viewport with words saying what it shows;
// every screenshot the browser tests write (docShots) is shown, and docs/img/console holds
// nothing else, within its budget.
func TestRolePages(t *testing.T) {
	console, err := os.ReadFile(consoleMD)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(readmeMD)
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	for _, role := range web.Roles {
		name := rolePage(role)
		page, err := os.ReadFile(filepath.Join(rolesDir, name))
		if err != nil {
			t.Errorf("role %s has no page: %v", role, err)
			continue
		}
		if !bytes.Contains(page, []byte("`"+role+"`")) {
			t.Errorf("docs/roles/%s does not name its role %s", name, role)
		}
		if !bytes.Contains(console, []byte("(roles/"+name)) {
			t.Errorf("docs/console.md does not link roles/%s", name)
		}
		if !bytes.Contains(readme, []byte("(docs/roles/"+name)) {
			t.Errorf("README.md does not link docs/roles/%s", name)
		}
		for _, m := range imageRE.FindAllSubmatch(page, -1) {
			alt, ref := string(m[1]), string(m[2])
			file := filepath.Join(rolesDir, filepath.FromSlash(ref))
			if strings.TrimSpace(alt) == "" {
				t.Errorf("docs/roles/%s: the image %s has no words for who cannot see it", name, ref)
			}
			f, err := os.Open(file)
			if err != nil {
				t.Errorf("docs/roles/%s shows %s: %v", name, ref, err)
				continue
			}
			cfg, format, err := image.DecodeConfig(f)
			f.Close()
			if err != nil || format != "png" || cfg.Width != viewWidth || cfg.Height != viewHeight {
				t.Errorf("docs/roles/%s shows %s: %s %dx%d, %v; want a PNG of %dx%d", name, ref, format, cfg.Width, cfg.Height, err, viewWidth, viewHeight)
			}
			shown[path.Base(ref)] = true
		}
	}
	for _, s := range docShots {
		if !shown[s+".png"] {
			t.Errorf("no role page shows the screenshot %s.png", s)
		}
	}
	entries, err := os.ReadDir(shotsDir)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, e := range entries {
		if !slices.Contains(docShots, strings.TrimSuffix(e.Name(), ".png")) {
			t.Errorf("docs/img/console/%s is no screenshot of docShots", e.Name())
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		total += info.Size()
	}
	if total > shotsBudget {
		t.Errorf("the screenshots weigh %d bytes, over the budget of %d", total, shotsBudget)
	}
}
