package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/tier"
)

// dockerfile is the part of the Dockerfile the tests read: its stages' instructions, with
// comments dropped and continuation lines joined, as Docker reads them.
type dockerfile struct {
	stages []stage
}

type stage struct {
	from, name string
	instrs     []instr
}

type instr struct {
	cmd  string // upper case: RUN, ARG, LABEL, …
	args string
}

func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var d dockerfile
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || trimmed == "" && cur.Len() == 0 {
			continue // comments, inside a continuation too
		}
		if body, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(trimmed)
		text := cur.String()
		cur.Reset()
		cmd, args, _ := strings.Cut(text, " ")
		in := instr{strings.ToUpper(cmd), strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			from, name, _ := strings.Cut(in.args, " AS ")
			d.stages = append(d.stages, stage{from: strings.TrimSpace(from), name: strings.TrimSpace(name)})
			continue
		}
		if len(d.stages) == 0 {
			t.Fatalf("Dockerfile: %s before FROM", in.cmd)
		}
		s := &d.stages[len(d.stages)-1]
		s.instrs = append(s.instrs, in)
	}
	return d
}

// vars are the stage's build arguments (their defaults, or override's values) and ENV
// variables, as a RUN's shell or a LABEL sees them.
func (s stage) vars(t *testing.T, override map[string]string) map[string]string {
	t.Helper()
	vars := map[string]string{}
	for _, in := range s.instrs {
		switch in.cmd {
		case "ARG":
			name, def, _ := strings.Cut(in.args, "=")
			vars[name] = def
			if v, ok := override[name]; ok {
				vars[name] = v
			}
		case "ENV":
			words, err := shellWords(in.args, vars)
			if err != nil {
				t.Fatalf("Dockerfile: ENV %s: %v", in.args, err)
			}
			for _, w := range words {
				k, v, ok := strings.Cut(w, "=")
				if !ok {
					t.Fatalf("Dockerfile: ENV %s: want KEY=value pairs", in.args)
				}
				vars[k] = v
			}
		}
	}
	return vars
}

// shellWords splits a shell command line into words as /bin/sh would, expanding $NAME and
// ${NAME} from vars, with "&&" a word of its own. What it does not know — other operators,
// command substitution, an unset variable — is an error: the Dockerfile's build line must be
// one the test runs exactly.
func shellWords(s string, vars map[string]string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	expand := func(i int) (int, error) { // s[i] == '$'
		rest := s[i+1:]
		var name string
		var end int
		if strings.HasPrefix(rest, "{") {
			j := strings.IndexByte(rest, '}')
			if j < 0 {
				return 0, errors.New("unterminated ${")
			}
			name, end = rest[1:j], i+1+j+1
		} else {
			j := 0
			for j < len(rest) && (rest[j] == '_' || rest[j] >= 'A' && rest[j] <= 'Z' || rest[j] >= 'a' && rest[j] <= 'z' || j > 0 && rest[j] >= '0' && rest[j] <= '9') {
				j++
			}
			if j == 0 {
				return 0, fmt.Errorf("unsupported $ expansion at %q", s[i:])
			}
			name, end = rest[:j], i+1+j
		}
		v, ok := vars[name]
		if !ok {
			return 0, fmt.Errorf("$%s is neither an ARG nor an ENV of the stage", name)
		}
		w.WriteString(v)
		inWord = true
		return end, nil
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			i++
		case strings.HasPrefix(s[i:], "&&"):
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			words = append(words, "&&")
			i += 2
		case strings.ContainsRune(";|&<>`()", rune(c)):
			return nil, fmt.Errorf("unsupported shell syntax %q", s[i:])
		case c == '\\' && strings.HasPrefix(s[i:], "\\\n"): // a line continuation
			i += 2
		case c == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("trailing backslash")
			}
			w.WriteByte(s[i+1])
			inWord = true
			i += 2
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated '")
			}
			w.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += j + 2
		case c == '"':
			inWord = true
			i++
			for {
				if i >= len(s) {
					return nil, errors.New(`unterminated "`)
				}
				if s[i] == '"' {
					i++
					break
				}
				switch {
				case s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0:
					w.WriteByte(s[i+1])
					i += 2
				case s[i] == '`' || strings.HasPrefix(s[i:], "$("):
					return nil, fmt.Errorf("unsupported command substitution %q", s[i:])
				case s[i] == '$':
					var err error
					if i, err = expand(i); err != nil {
						return nil, err
					}
				default:
					w.WriteByte(s[i])
					i++
				}
			}
		case c == '$':
			var err error
			if i, err = expand(i); err != nil {
				return nil, err
			}
		default:
			w.WriteByte(c)
			inWord = true
			i++
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// goBuild is the build stage's `go build` command: the environment assignments before it,
// and its arguments.
func (s stage) goBuild(t *testing.T, override map[string]string) (env, args []string) {
	t.Helper()
	vars := s.vars(t, override)
	var found [][]string
	for _, in := range s.instrs {
		if in.cmd != "RUN" || !strings.Contains(in.args, "go build") {
			continue
		}
		words, err := shellWords(in.args, vars)
		if err != nil {
			t.Fatalf("Dockerfile: RUN %s: %v", in.args, err)
		}
		for cmd := range strings.SplitSeq(strings.Join(words, "\x00"), "\x00&&\x00") {
			w := strings.Split(cmd, "\x00")
			i := 0
			for i < len(w) && strings.Contains(w[i], "=") && !strings.HasPrefix(w[i], "-") {
				i++
			}
			if len(w) > i+1 && w[i] == "go" && w[i+1] == "build" {
				found = append(found, w)
				env, args = w[:i], w[i+2:]
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("the build stage has %d go build commands, want 1: %q", len(found), found)
	}
	for k, v := range vars { // the stage's ENV (and ARGs) are the command's environment too
		env = append([]string{k + "=" + v}, env...)
	}
	return env, args
}

func (d dockerfile) stage(t *testing.T, name string) stage {
	t.Helper()
	for _, s := range d.stages {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("the Dockerfile has no stage %q", name)
	return stage{}
}

// instrs returns the arguments of every instruction cmd of s.
func (s stage) all(cmd string) []string {
	var out []string
	for _, in := range s.instrs {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

// TestDockerfileBuild builds cobranca with exactly the Dockerfile's build command — its
// environment, flags and -ldflags, the build arguments VERSION and REVISION given test values
// — only the output path changed, from the repository root (the build stage's COPY . .). Then
// the binary shows the flags took effect: `version` prints the values, it is static (no
// program interpreter: it runs on distroless/static) and stripped (-s). And the image's
// HEALTHCHECK command, run as written against that binary's `serve`, reports it healthy.
func TestDockerfileBuild(t *testing.T) {
	tier.EndToEnd(t)
	d := readDockerfile(t)
	build := d.stage(t, "build")
	if wd := build.all("WORKDIR"); len(wd) != 1 || !slices.Contains(build.all("COPY"), ". .") {
		t.Fatalf("the build stage's WORKDIR %v and COPY %v: want one WORKDIR and COPY . . (the repository root)", wd, build.all("COPY"))
	}
	testArgs := map[string]string{"VERSION": "9.8.7-test", "REVISION": "0123456789abcdef0123456789abcdef01234567"}
	env, args := build.goBuild(t, testArgs)
	out := filepath.Join(t.TempDir(), "cobranca")
	o := slices.Index(args, "-o")
	if o < 0 || o+1 >= len(args) || args[len(args)-1] != "./cmd/cobranca" {
		t.Fatalf("go build %q: want -o PATH and the package ./cmd/cobranca last", args)
	}
	binPath := args[o+1]
	args[o+1] = out

	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command: %v", err)
	}
	cmd := exec.Command(goTool, append([]string{"build"}, args...)...)
	cmd.Dir = "../.."
	// The host's environment (PATH, caches) without GOFLAGS, which the golang image does not
	// set, then the Dockerfile's: its assignments win.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOFLAGS=") })
	cmd.Env = append(cmd.Env, env...)
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s (env %q): %v\n%s", cmd, env, err, b)
	}
	t.Logf("go build %s (env %q): %v", strings.Join(args, " "), env, time.Since(start).Round(time.Millisecond))

	// The version and revision the build arguments gave.
	got, err := exec.Command(out, "version").Output()
	want := fmt.Sprintf("cobranca %s (revision %s, %s)\n", testArgs["VERSION"], testArgs["REVISION"], runtime.Version())
	if err != nil || string(got) != want {
		t.Errorf("cobranca version = %q, %v; want %q", got, err, want)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has a program interpreter: it is not static (CGO_ENABLED=0), and distroless/static has no libc")
		}
	}
	if f.Section(".symtab") != nil {
		t.Error("the binary has a symbol table: -ldflags -s did not take effect")
	}
	f.Close()

	// The final stage runs that binary from where the build stage put it.
	final := d.stages[len(d.stages)-1]
	hc := final.all("HEALTHCHECK")
	if len(hc) != 1 {
		t.Fatalf("the image has %d HEALTHCHECK instructions, want 1", len(hc))
	}
	_, execForm, ok := strings.Cut(hc[0], "CMD ")
	var argv []string
	if !ok || json.Unmarshal([]byte(execForm), &argv) != nil || len(argv) == 0 {
		t.Fatalf("HEALTHCHECK %s: want the exec form CMD [\"…\", …] (the image has no shell)", hc[0])
	}
	var entry []string
	if eps := final.all("ENTRYPOINT"); len(eps) != 1 || json.Unmarshal([]byte(eps[0]), &entry) != nil || len(entry) != 1 || entry[0] != argv[0] {
		t.Errorf("ENTRYPOINT %v: want [%q], the binary the HEALTHCHECK runs", eps, argv[0])
	}
	if !slices.Contains(final.all("COPY"), "--from=build "+binPath+" "+argv[0]) {
		t.Errorf("the final stage does not COPY --from=build %s %s: %q", binPath, argv[0], final.all("COPY"))
	}
	finalVars := final.vars(t, nil)

	// That HEALTHCHECK, as written, against the built binary's serve, in the image's
	// environment (its ENV, in development mode: production would want an issuer).
	addr := freeAddr(t)
	environ := []string{"COBRANCA_ENV=development", "COBRANCA_ADDR=" + addr, "COBRANCA_DATA_DIR=" + t.TempDir(), "COBRANCA_METRICS_ADDR=off", "PATH=" + os.Getenv("PATH")}
	if finalVars["COBRANCA_ADDR"] == "" {
		t.Errorf("the image sets no COBRANCA_ADDR: the health check would ask the default port")
	}
	srv := exec.Command(out, "serve")
	srv.Env = environ
	var logs bytes.Buffer
	srv.Stderr = &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	defer func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		if err := <-done; err != nil {
			t.Errorf("serve after SIGTERM: %v\n%s", err, logs.String())
		}
	}()
	check := exec.Command(out, argv[1:]...)
	check.Env = environ
	var last []byte
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c := *check
		b, err := c.CombinedOutput()
		if err == nil {
			if !strings.HasPrefix(string(b), "healthy: GET http://"+addr+"/readyz: 200 OK") {
				t.Errorf("healthcheck said %q", b)
			}
			break
		}
		last = b
		if time.Now().After(deadline) {
			t.Fatalf("the HEALTHCHECK command never said healthy: %v: %s\nserve:\n%s", err, last, logs.String())
		}
	}
	if _, port, _ := net.SplitHostPort(finalVars["COBRANCA_ADDR"]); port == "" {
		t.Errorf("the image's COBRANCA_ADDR %q has no port", finalVars["COBRANCA_ADDR"])
	}
}

// TestDockerfileLabels: the image carries the OCI annotations, the version and revision from
// the same build arguments the binary gets, the source the module's repository.
func TestDockerfileLabels(t *testing.T) {
	d := readDockerfile(t)
	final := d.stages[len(d.stages)-1]
	testArgs := map[string]string{"VERSION": "9.8.7-test", "REVISION": "0123456789abcdef", "CREATED": "2026-12-01T00:00:00Z"}
	vars := final.vars(t, testArgs)
	labels := map[string]string{}
	for _, l := range final.all("LABEL") {
		words, err := shellWords(l, vars)
		if err != nil {
			t.Fatalf("LABEL %s: %v", l, err)
		}
		for _, w := range words {
			k, v, _ := strings.Cut(w, "=")
			labels[k] = v
		}
	}
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	module, _, _ := strings.Cut(strings.TrimPrefix(string(mod), "module "), "\n")
	for k, want := range map[string]string{
		"org.opencontainers.image.version":  testArgs["VERSION"],
		"org.opencontainers.image.revision": testArgs["REVISION"],
		"org.opencontainers.image.created":  testArgs["CREATED"],
		"org.opencontainers.image.source":   "https://" + module,
	} {
		if labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, labels[k], want)
		}
	}
}

// TestShellWords: the splitter the build test trusts reads the shell's quoting, and refuses
// what it does not know rather than guess.
func TestShellWords(t *testing.T) {
	vars := map[string]string{"V": "1.0 beta", "R": "abc"}
	got, err := shellWords(`A=0 go build -ldflags="-s -X main.v=${V} -X 'q'" -o '/out/x y' ./cmd \
 && mkdir -p /d\ e $R`, vars)
	want := []string{"A=0", "go", "build", "-ldflags=-s -X main.v=1.0 beta -X 'q'", "-o", "/out/x y", "./cmd", "&&", "mkdir", "-p", "/d e", "abc"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("shellWords = %q, %v; want %q", got, err, want)
	}
	for _, bad := range []string{"go build; rm", "a | b", "echo $(date)", "echo `date`", `echo "$(date)"`, "echo $UNSET", `echo "x`, "a || b", "a > f"} {
		if _, err := shellWords(bad, vars); err == nil {
			t.Errorf("shellWords(%q) accepted it", bad)
		}
	}
}
