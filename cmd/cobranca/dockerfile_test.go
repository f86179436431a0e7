package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
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
// variables, as a RUN's shell or a LABEL sees them. An ENV's values are plain words: quotes
// there would need a shell's reading, which this does not do.
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
			for _, w := range strings.Fields(in.args) {
				k, v, ok := strings.Cut(w, "=")
				if !ok || strings.ContainsAny(v, `"'$\`) {
					t.Fatalf("Dockerfile: ENV %s: want KEY=value pairs of plain words", in.args)
				}
				vars[k] = v
			}
		}
	}
	return vars
}

// environ is vars as a process environment, after the host's (PATH, the Go caches) without
// GOFLAGS, which the golang image does not set: vars win.
func environ(vars map[string]string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOFLAGS=") })
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// shellWords is words as /bin/sh reads them (quotes, ${NAME} from vars; an unset one is an
// error), as Docker reads a LABEL's.
func shellWords(t testing.TB, words string, vars map[string]string) []string {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-euc", `eval "set -- $0"; printf '%s\0' "$@"`, words)
	cmd.Env = environ(vars)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sh reading %s: %v", words, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
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

// TestDockerfileBuild runs the Dockerfile's build line as written, by /bin/sh, with its
// environment (the stage's ARGs, VERSION and REVISION given test values, and ENVs), from the
// repository root (the build stage's COPY . .), only /out changed to a directory of the
// test's. Then the binary shows the flags took effect: `version` prints the values, it is
// static (no program interpreter: it runs on distroless/static) and stripped (-s). And the
// image's HEALTHCHECK command, run as written against that binary's `serve`, reports it
// healthy. .ci/run builds everything with the Dockerfile's CGO_ENABLED=0 and -trimpath, so
// that here only the link is new.
func TestDockerfileBuild(t *testing.T) {
	tier.EndToEnd(t)
	d := readDockerfile(t)
	build := d.stage(t, "build")
	if wd := build.all("WORKDIR"); len(wd) != 1 || !slices.Contains(build.all("COPY"), ". .") {
		t.Fatalf("the build stage's WORKDIR %v and COPY %v: want one WORKDIR and COPY . . (the repository root)", wd, build.all("COPY"))
	}
	testArgs := map[string]string{"VERSION": "9.8.7-test", "REVISION": "0123456789abcdef0123456789abcdef01234567"}
	var run []string
	for _, r := range build.all("RUN") {
		if strings.Contains(r, "go build") {
			run = append(run, r)
		}
	}
	// The line writes under /out, which the final stage copies from: here, a directory of the
	// test's. Every other word stays as written, and /bin/sh (the golang image's is dash, as
	// Debian's) runs it.
	const outDir = "/out/"
	if len(run) != 1 || !strings.Contains(run[0], "-o "+outDir) {
		t.Fatalf("the build stage's RUN lines with go build: %q; want one, writing with -o under %s", run, outDir)
	}
	tmp := t.TempDir()
	line := strings.ReplaceAll(run[0], outDir, tmp+"/")
	_, binPath, _ := strings.Cut(run[0], "-o ")
	binPath, _, _ = strings.Cut(binPath, " ")
	out := filepath.Join(tmp, strings.TrimPrefix(binPath, outDir))
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command: %v", err)
	}
	cmd := exec.Command("/bin/sh", "-euc", line)
	cmd.Dir = "../.."
	cmd.Env = environ(build.vars(t, testArgs))
	start := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("RUN %s: %v\n%s", line, err, b)
	}
	t.Logf("RUN %s: %v", line, time.Since(start).Round(time.Millisecond))

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
		for _, w := range shellWords(t, l, vars) {
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

// TestShellWords: LABEL's words are read with the shell's quoting, and an unset variable
// fails rather than reads as empty.
func TestShellWords(t *testing.T) {
	vars := map[string]string{"V": "1.0 beta", "R": "abc"}
	got := shellWords(t, `a="x ${V}" 'b c' d\ e $R`, vars)
	if want := []string{"a=x 1.0 beta", "b c", "d e", "abc"}; !slices.Equal(got, want) {
		t.Errorf("shellWords = %q, want %q", got, want)
	}
	ft := &fatalT{TB: t}
	func() {
		defer func() { _ = recover() }()
		shellWords(ft, "$UNSET", vars)
	}()
	if !ft.failed {
		t.Error("shellWords of an unset variable did not fail")
	}
}

// fatalT records a Fatal instead of ending the test, to see one happen.
type fatalT struct {
	testing.TB
	failed bool
}

func (f *fatalT) Fatalf(format string, args ...any) { f.failed = true; panic(f) }
