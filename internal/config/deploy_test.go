package config

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// deployFiles are the files that name cobranca's environment variables for people: the
// deployment files and the documentation.
func deployFiles(t *testing.T) map[string]string {
	t.Helper()
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, name := range append([]string{"docker-compose.yml", "fly.toml", "Dockerfile", "README.md"}, docs...) {
		path := filepath.Join("../..", strings.TrimPrefix(name, "../../"))
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.ToSlash(strings.TrimPrefix(path, "../../"))] = string(b)
	}
	if _, ok := files["docs/operations.md"]; !ok {
		t.Fatal("there is no docs/operations.md")
	}
	return files
}

// notServer are COBRANCA_ names the docs may use that are not the server's configuration:
// the tests' own.
var notServer = []string{"COBRANCA_TEST_DATABASE_URL"}

var cobrancaName = regexp.MustCompile(`\bCOBRANCA_[A-Z0-9_]*[A-Z0-9]\b`)

// TestDeploymentNamesKnownVariables: every COBRANCA_ variable the deployment files and the
// docs name is one the configuration knows (a misspelt or retired name there would stop the
// server or be silently ignored by a reader), and every variable they set — whatever its
// prefix — is in the table.
func TestDeploymentNamesKnownVariables(t *testing.T) {
	known := map[string]bool{}
	for _, v := range variables {
		known[v.name] = true
	}
	for name, text := range deployFiles(t) {
		for _, v := range cobrancaName.FindAllString(text, -1) {
			if !known[v] && !slices.Contains(notServer, v) {
				t.Errorf("%s names %s, which the configuration does not know", name, v)
			}
		}
	}
	files := deployFiles(t)
	set := map[string][]string{
		"docker-compose.yml": composeEnvironment(t, files["docker-compose.yml"], "cobranca"),
		"fly.toml":           tomlSection(files["fly.toml"], "env"),
		"Dockerfile":         dockerfileEnv(files["Dockerfile"]),
	}
	for file, names := range set {
		if len(names) == 0 {
			t.Errorf("%s sets no variable: the test cannot read it any more", file)
		}
		for _, v := range names {
			if !known[v] {
				t.Errorf("%s sets %s, which the configuration does not know", file, v)
			}
		}
	}
}

// TestDeploymentNamesRequiredVariables: every variable production requires is named (set, or
// listed for the secrets) in fly.toml, docker-compose.yml and docs/operations.md.
func TestDeploymentNamesRequiredVariables(t *testing.T) {
	files := deployFiles(t)
	required := RequiredInProduction()
	if len(required) == 0 {
		t.Fatal("no variable is required in production")
	}
	for _, file := range []string{"fly.toml", "docker-compose.yml", "docs/operations.md"} {
		named := cobrancaName.FindAllString(files[file], -1)
		for _, v := range required {
			if !slices.Contains(named, v) {
				t.Errorf("%s does not name %s, which production requires", file, v)
			}
		}
	}
}

// composeEnvironment returns the keys of the environment mapping of service in a compose file
// written as docker-compose.yml is: two-space indentation, `environment:` a mapping.
func composeEnvironment(t *testing.T, text, service string) []string {
	t.Helper()
	var names []string
	inService, inEnv := false, false
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		switch {
		case indent == 2:
			inService, inEnv = trimmed == service+":", false
		case inService && indent == 4:
			inEnv = trimmed == "environment:"
			if strings.HasPrefix(trimmed, "environment:") && !inEnv {
				t.Fatalf("docker-compose.yml: %s's environment is not a mapping the test reads", service)
			}
		case inEnv && indent == 6:
			key, _, ok := strings.Cut(trimmed, ":")
			if !ok || strings.HasPrefix(key, "- ") {
				t.Fatalf("docker-compose.yml: %q: want KEY: value", trimmed)
			}
			names = append(names, key)
		}
	}
	return names
}

// tomlSection returns the keys of a [section] of a TOML file.
func tomlSection(text, section string) []string {
	var names []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "[") {
			in = trimmed == "["+section+"]"
			continue
		}
		if key, _, ok := strings.Cut(trimmed, "="); in && ok && !strings.HasPrefix(trimmed, "#") {
			names = append(names, strings.TrimSpace(key))
		}
	}
	return names
}

// dockerfileEnv returns the keys the Dockerfile's ENV instructions set (KEY=value form,
// continuation lines joined).
func dockerfileEnv(text string) []string {
	var names []string
	joined := strings.ReplaceAll(text, "\\\n", " ")
	for _, line := range strings.Split(joined, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "ENV ")
		if !ok {
			continue
		}
		for _, kv := range strings.Fields(rest) {
			if key, _, ok := strings.Cut(kv, "="); ok {
				names = append(names, key)
			}
		}
	}
	return names
}
