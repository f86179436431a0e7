package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHelp: every way of asking for help prints on stdout and succeeds;
// an unknown command or flag prints the usage on stderr and exits 2.
func TestHelp(t *testing.T) {
	tests := []struct {
		args       []string
		wantErr    error    // nil: exit 0
		wantStdout []string // substrings, in order
		wantStderr []string
	}{
		{args: []string{"--help"}, wantStdout: allSynopses()},
		{args: []string{"-h"}, wantStdout: allSynopses()},
		{args: []string{"help"}, wantStdout: allSynopses()},
		{args: []string{"help", "help"}, wantStdout: allSynopses()},
		{args: []string{"help", "analyze"}, wantStdout: []string{"usage: cobranca analyze [--json] [--pacing TIME] FILE|-", "flags:", "-json", "-pacing"}},
		{args: []string{"analyze", "--help"}, wantStdout: []string{"usage: cobranca analyze [--json] [--pacing TIME] FILE|-", "flags:", "-json", "-pacing"}},
		{args: []string{"serve", "--help"}, wantStdout: []string{"usage: cobranca serve\n\nrun the server\n"}},
		{args: []string{"help", "serve"}, wantStdout: []string{"usage: cobranca serve\n"}},
		{args: []string{"token", "-h"}, wantStdout: []string{"usage: cobranca token --sub NAME", "-sub NAME", "-ttl duration"}},
		{args: []string{"help", "token"}, wantStdout: []string{"usage: cobranca token --sub NAME", "-scope SCOPES"}},
		{args: []string{"audit", "verify", "--help"}, wantStdout: []string{"usage: cobranca audit verify", "-checkpoint", "-pubkey FILE"}},
		{args: []string{"help", "audit", "checkpoint"}, wantStdout: []string{"usage: cobranca audit checkpoint", "-out"}},
		{args: []string{"help", "audit"}, wantStdout: []string{"cobranca audit verify", "cobranca audit checkpoint", "cobranca audit pubkey"}},
		{args: []string{"audit", "--help"}, wantStdout: []string{"cobranca audit verify", "cobranca audit pubkey"}},
		{args: []string{"migrate", "-help"}, wantStdout: []string{"usage: cobranca migrate [status]"}},
		// Help is asked for anywhere among a command's arguments, also
		// after a positional one, where the flag package stops.
		{args: []string{"migrate", "status", "--help"}, wantStdout: []string{"usage: cobranca migrate [status]"}},
		{args: []string{"help", "migrate", "status"}, wantStdout: []string{"usage: cobranca migrate [status]"}},
		{args: []string{"help", "migrate", "up"}, wantStdout: []string{"usage: cobranca migrate [status]"}},
		{args: []string{"analyze", "x", "--help"}, wantStdout: []string{"usage: cobranca analyze [--json] [--pacing TIME] FILE|-", "-json"}},
		{args: []string{"analyze", "--json", "x", "-h"}, wantStdout: []string{"usage: cobranca analyze [--json] [--pacing TIME] FILE|-", "-json"}},
		{args: []string{"help", "analyze", "x"}, wantStdout: []string{"usage: cobranca analyze [--json] [--pacing TIME] FILE|-"}},
		{args: []string{"audit", "verify", "x", "-help"}, wantStdout: []string{"usage: cobranca audit verify", "-pubkey FILE"}},
		{args: []string{"token", "--sub", "alice", "extra", "--help"}, wantStdout: []string{"usage: cobranca token --sub NAME"}},
		{args: []string{"serve", "--bogus", "--help"}, wantStdout: []string{"usage: cobranca serve\n"}},

		// After the -- terminator, --help is an argument like any other.
		// (a file of that name, which does not exist).
		{args: []string{"analyze", "--", "--help"}, wantErr: fs.ErrNotExist},
		{args: []string{"analyze", "--json", "--", "-h"}, wantErr: fs.ErrNotExist},

		{args: []string{"frobnicate"}, wantErr: exitUsage, wantStderr: append([]string{`unknown command "frobnicate"`}, allSynopses()...)},
		{args: []string{"help", "frobnicate"}, wantErr: exitUsage, wantStderr: []string{`unknown command "frobnicate"`, "cobranca serve"}},
		{args: []string{"audit"}, wantErr: exitUsage, wantStderr: []string{"audit: want a subcommand", "cobranca audit verify"}},
		{args: []string{"audit", "frob"}, wantErr: exitUsage, wantStderr: []string{`audit: unknown subcommand "frob"`, "cobranca audit pubkey"}},
		{args: []string{"serve", "--bogus"}, wantErr: exitUsage, wantStderr: []string{"flag provided but not defined: -bogus", "usage: cobranca serve"}},
		{args: []string{"--bogus"}, wantErr: exitUsage, wantStderr: []string{"-bogus", "usage: cobranca serve"}},
		{args: []string{"analyze"}, wantErr: exitUsage, wantStderr: []string{"want one FILE", "usage: cobranca analyze"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), tt.args, []string{"COBRANCA_DATA_DIR=" + t.TempDir()}, strings.NewReader(""), &stdout, &stderr)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("run(%q) = %v, want %v; stderr:\n%s", tt.args, err, tt.wantErr, stderr.String())
			}
			if tt.wantErr == nil && stderr.Len() > 0 {
				t.Errorf("help wrote to stderr:\n%s", stderr.String())
			}
			if tt.wantErr != nil && stdout.Len() > 0 {
				t.Errorf("a usage mistake wrote to stdout:\n%s", stdout.String())
			}
			checkInOrder(t, "stdout", stdout.String(), tt.wantStdout)
			checkInOrder(t, "stderr", stderr.String(), tt.wantStderr)
		})
	}
}

func allSynopses() []string {
	var s []string
	for _, c := range commands {
		s = append(s, c.synopsis())
	}
	return s
}

func checkInOrder(t *testing.T, name, got string, want []string) {
	t.Helper()
	rest := got
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Errorf("%s lacks %q (in this order):\n%s", name, w, got)
			return
		}
		rest = rest[i+len(w):]
	}
}

// TestCommandsDoc keeps docs/operations.md's command table the one the usage
// is made from.
func TestCommandsDoc(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Commands\n")
	if !ok {
		t.Fatal("docs/operations.md has no ## Commands section")
	}
	_, table, _ := strings.Cut(section, "|---|---|\n")
	table, _, _ = strings.Cut(table, "\n\n")
	var want []string
	for _, c := range commands {
		def := ""
		if c.name == defaultCommand {
			def = " (default)"
		}
		want = append(want, "| `"+strings.ReplaceAll(c.synopsis(), "|", `\|`)+"`"+def+" | "+c.summary+" |")
	}
	if diff := cmp.Diff(want, strings.Split(table, "\n")); diff != "" {
		t.Errorf("docs/operations.md's command table and the commands table differ (-code +doc):\n%s", diff)
	}
}

// mustRun runs a cobranca command with environ and returns its standard output; a failure
// ends the test, naming the command and what it wrote on standard error.
func mustRun(t *testing.T, environ []string, args ...string) string {
	t.Helper()
	return mustRunIn(t, environ, "", args...)
}

// mustRunIn is mustRun with stdin as the command's standard input.
func mustRunIn(t *testing.T, environ []string, stdin string, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := run(t.Context(), args, environ, strings.NewReader(stdin), &out, &errOut); err != nil {
		t.Fatalf("cobranca %s: %v: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}
