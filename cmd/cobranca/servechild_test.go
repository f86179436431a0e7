package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/tier"
)

// serveChild, in the environment of a process of this test binary, makes it run `cobranca serve`
// as the cobranca binary's main does (until SIGTERM or SIGINT, then the exit status), with the
// environment it holds (a JSON list) instead of the test's. Not a COBRANCA_ variable: serve
// refuses those it does not know.
const serveChild = "CBTEST_SERVE_ENVIRON"

// pg is the PostgreSQL cluster of this package's tests, each on a database of its own. A test
// that stops PostgreSQL starts a cluster of its own. It is never the run's shared server: the
// tests verify the audit chain, and on PostgreSQL the sealer seals only events older than the
// server's oldest running transaction (pg_snapshot_xmin), which is server-wide; another
// package's transaction held open on a shared server would leave their events unsealed.
var pg = pgtest.Private()

// TestMain runs the tests, or, in a serve child process (startServeProcess), serve.
func TestMain(m *testing.M) {
	if env := os.Getenv(serveChild); env != "" {
		var environ []string
		if err := json.Unmarshal([]byte(env), &environ); err != nil {
			panic(err)
		}
		os.Exit(mainStatus([]string{"serve"}, environ, nil, os.Stdout, os.Stderr))
	}
	code := m.Run()
	pg.Close()
	os.Exit(code)
}

// serveProcess is `cobranca serve` in a child process.
type serveProcess struct {
	cmd  *exec.Cmd
	logs *serveLog
	out  *io.PipeWriter // its standard output and error, read into logs
	addr string
}

// startServeProcess starts serve in a child process with environ and waits until it is ready
// at addr (its COBRANCA_ADDR). A test with a serve process is end to end (package tier):
// under -short, startServeProcess skips it.
func startServeProcess(t *testing.T, environ []string, addr string) *serveProcess {
	t.Helper()
	tier.EndToEnd(t)
	env, err := json.Marshal(environ)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	p := &serveProcess{logs: &serveLog{addrs: map[string]string{}}, out: pw, addr: addr}
	go p.logs.read(pr)
	p.cmd = exec.Command(os.Args[0], "-test.run", "^$")
	p.cmd.Env = append(os.Environ(), serveChild+"="+string(env))
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("serve (pid %d, %s) wrote:\n%s", p.cmd.Process.Pid, addr, p.logs)
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, err := p.ready()
		if code == http.StatusOK {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not become ready at %s: %d %v\n%s", addr, code, err, p.logs)
		}
	}
}

// ready is the status of GET /readyz, or 0 and the error when nothing answers.
func (p *serveProcess) ready() (int, error) {
	resp, err := http.Get("http://" + p.addr + "/readyz")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// kill ends the process with SIGKILL, as a crash or the OOM killer would, and reaps it.
func (p *serveProcess) kill() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
	p.out.Close()
}

// terminate sends SIGTERM, as an orchestrator stopping the process does.
func (p *serveProcess) terminate(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// wait waits for the process to exit and returns its exit status (-1: ended by a signal).
func (p *serveProcess) wait() int {
	err := p.cmd.Wait()
	p.out.Close()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}
