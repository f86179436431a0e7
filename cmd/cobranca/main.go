// Command cobranca is a self-hosted MCP server for collections (accounts
// receivable): `cobranca serve` runs it; the other subcommands work offline.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(int(ee))
		}
		fmt.Fprintln(os.Stderr, "cobranca:", err)
		os.Exit(1)
	}
}

// env is what every subcommand receives from the composition root.
type env struct {
	environ []string
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
}

// exitError asks main to exit with a status after the command already said
// why (a failed verification, a rejected portfolio).
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e env, args []string) error
}

// commands is the one table of subcommands.
var commands = []command{
	{"serve", "run the MCP server (the default)", serve},
	{"analyze", "analyze a portfolio file offline: analyze [--json] FILE|-", analyze},
	{"contracts", "print every Tool Contract visible to agents as JSON", printContracts},
	{"migrate", "apply pending database migrations: migrate [status]", migrate},
	{"audit", "verify the audit chain or sign its head: audit verify [--checkpoint FILE] | audit checkpoint [--out FILE]", audit},
	{"token", "print a development access token: token --sub NAME [--scope \"a b\"] [--agent NAME] [--acr ACR] [--ttl 1h]", token},
}

// run is the whole program; main only supplies the process's environment.
func run(ctx context.Context, args []string, environ []string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := env{environ: environ, stdin: stdin, stdout: stdout, stderr: stderr}
	name := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if name == "help" || name == "-h" || name == "--help" {
		usage(stdout)
		return nil
	}
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == name })
	if i < 0 {
		usage(stderr)
		return fmt.Errorf("unknown command %q", name)
	}
	return commands[i].run(ctx, e, args)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: cobranca [command] [flags]")
	fmt.Fprintln(w)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nConfiguration comes from COBRANCA_* environment variables; see README.md.")
}
