// Command cobranca is a self-hosted MCP server for collections (accounts
// receivable): `cobranca serve` runs it; the other subcommands work offline.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	os.Exit(mainStatus(os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr))
}

// mainStatus runs a command as the process does, until SIGINT or SIGTERM asks it to stop (serve
// then drains and returns), and returns the exit status: 0, an exitError's, or 1 with the error
// on stderr. The tests' serve child processes run it too.
func mainStatus(args, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, args, environ, stdin, stdout, stderr)
	stop()
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return int(ee)
	}
	fmt.Fprintln(stderr, "cobranca:", err)
	return 1
}

// env is what every subcommand receives from the composition root.
type env struct {
	environ []string
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
}

// exitError asks main to exit with a status after the command already said
// why (a failed verification, a rejected portfolio, a usage mistake).
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// exitUsage is the status of a command line cobranca cannot make sense of,
// as with the flag package's ExitOnError.
const exitUsage = exitError(2)

type command struct {
	name    string // one word, or a group and a word: "audit verify"
	args    string // what follows the name in a synopsis
	summary string
	run     func(ctx context.Context, e env, fs *flagSet, args []string) error
}

// commands is the one table of subcommands: the usage text, the help of
// each command and docs/operations.md's command table are made from it.
var commands = []command{
	{"serve", "", "run the server", serve},
	{"analyze", "[--json] [--pacing TIME] FILE|-", "validate and analyze a portfolio `{asOf, invoices, …}` offline", analyze},
	{"contracts", "", "print every Tool Contract visible to agents", printContracts},
	{"migrate", "[status]", "apply pending database migrations (as the owner role), or list them", migrate},
	{"audit verify", "[--file EXPORT] [--checkpoint FILE] [--pubkey FILE]", "walk the audit hash chain and check every event's MAC under the audit key: `OK <count> events, head <seq> <hash>`, or the first bad sequence number and what is wrong (exit 1); with --file, the same checks of an export, offline (no database), naming the first bad line", auditVerify},
	{"audit export", "[--since TIME] [--until TIME] [--tool T] [--risk R] [--outcome O] [--subject S] [--actor A] [--client C] [--out FILE]", "write the sealed audit events as JSON Lines, with their seq, hashes, MACs and key ids, for `audit verify --file`: a stretch of the chain from --since to --until (dates or RFC 3339), or the events of it a filter picks; authenticated under the audit key", auditExport},
	{"audit checkpoint", "[--out FILE]", "sign the verified head of the audit chain (Ed25519) for keeping off the box", auditCheckpoint},
	{"audit rotate-key", "[--force]", "retire the old audit keys (COBRANCA_AUDIT_KEY after its first entry) in an audited event, once every replica seals under the first: from then on audit verify reports any event under a retired key; refuses while an old key sealed an event in the last 10 minutes, unless --force", auditRotateKey},
	{"audit pubkey", "", "print the checkpoint signing key's public half, so checkpoints can be verified elsewhere (`verify --pubkey`)", auditPubkey},
	{"customers import", "FILE|-", "create or update customers from a CSV file with the columns id, name and email (any order, a header line first): every row is checked first, and a file with any bad row imports nothing; prints how many were created, updated and unchanged; discards, in the same transaction, each customer's open reminder drafts written to a name or address the file changed, as `prepare_reminder` does (`draftsDiscarded`), so an approval cannot send one to the old address; audited as one event (counts only)", customersImport},
	{"invoices import", "[--json] FILE|-", "create or update the ledger's invoices from a CSV file with a header, or JSON Lines, of the names docs/operations.md lists (Ledger imports), up to 100 000: a file with any bad row imports nothing, its errors by line and column; prints how many were created, updated and unchanged; audited as one event (counts only)", invoicesImport},
	{"payments import", "[--json] [--source NAME] FILE|-", "record the payments of a bank file (a CNAB 240 return file, an OFX statement or a CSV of payments, told from its content) and match them to the ledger's invoices: by payment reference, then by the exact open amount of the customer's one invoice due near the payment; the rest stays unmatched; all or nothing; a payment already imported changes nothing; prints the counts; audited as one event (counts only)", paymentsImport},
	{"payments match", "[--json] PAYMENT INVOICE[=CENTS]…", "allocate a payment to invoices by hand, in the order given: INVOICE=CENTS, or INVOICE alone for its open amount while the payment lasts; what is left stays as credit; all or nothing; audited", paymentsMatch},
	{"files add", "PATH [--customer ID]", "store a document (invoice PDF, boleto, statement) for download links, up to COBRANCA_MAX_FILE_BYTES: prints its id and SHA-256; audited", filesAdd},
	{"files list", "", "list the stored files (id, name, type, size, SHA-256, customer, when and by whom added), never their content", filesList},
	{"files revoke", "LINK_ID", "revoke a download link at once (who and when are recorded); audited", filesRevoke},
	{"approvals list", "", "list the latest critical calls waiting for, or given, a person's approval (id, state, tool, requester, expiry, approver)", approvalsList},
	{"approvals show", "ID", "show one approval: who asked, the preview and the side effects a person approves, its state and who decided", approvalsShow},
	{"approvals approve", "ID (--token - | --token-file PATH)", "approve a pending critical call as the person whose access token is read from standard input (`--token -`) or a file, never the command line, checked as the approval page checks it: a person, holding one of the contract's approver roles, not the requester unless the contract allows it, stepped up as the contract asks; audited", approvalsApprove},
	{"approvals reject", "ID (--token - | --token-file PATH)", "reject a pending critical call, with the same checks as approve; audited", approvalsReject},
	{"write-off", "(--token - | --token-file PATH) --invoice ID --customer ID --amount CENTS --reason TEXT [--key KEY]", "write an invoice off (`collections.write_off_invoice`, forbidden to agents) as the person whose access token is read from standard input (`--token -`) or a file, never the command line, checked as the admin API checks it: a person holding the role `collections.write_off` and the scope `invoices:write_off`, stepped up (signed in within 5 minutes, COBRANCA_STEPUP_ACR); an invoice is written off once; prints the write-off; audited `invoice.written_off`", writeOff},
	{"token", "--sub NAME [--scope \"a b\"] [--agent NAME] [--acr ACR] [--role ROLE]… [--ttl 1h]", "print a development access token (refused outside development mode); `--role` (repeatable) puts a role in the roles claim, e.g. `--role collections.approver` for a person who approves critical calls", token},
	{"healthcheck", "[URL] [--timeout 3s]", "ask a running server whether it can serve (default: GET /readyz at COBRANCA_ADDR, a wildcard address on the loopback; a URL without a path gets /readyz): exit 0 when it answers 200, else 1 with the reason on stderr; for Docker's HEALTHCHECK (no shell or curl needed)", healthcheck},
	{"version", "", "print the version and revision this binary was built from (the Dockerfile's VERSION and REVISION build arguments, else what the Go toolchain recorded) and the Go version", printVersion},
	{"help", "[COMMAND]", "print the commands, or a command's flags (also `cobranca COMMAND --help`)", nil},
}

// defaultCommand runs when the first argument is not a command.
const defaultCommand = "serve"

// synopsis is how c is invoked: "cobranca analyze [--json] FILE|-".
func (c command) synopsis() string {
	return strings.TrimSpace("cobranca " + c.name + " " + c.args)
}

// run is the whole program; main only supplies the process's environment.
func run(ctx context.Context, args []string, environ []string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := env{environ: environ, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) > 0 && (args[0] == "help" || isHelpFlag(args[0])) {
		if len(args) == 1 || args[1] == "help" {
			usage(stdout, "")
			return nil
		}
		// `help CMD…` is `CMD… --help`: every command parses its flags
		// before it does anything.
		args = append(args[1:len(args):len(args)], "--help")
	}
	c, rest, err := lookup(args)
	switch {
	case errors.Is(err, errHelpGroup):
		usage(stdout, args[0])
		return nil
	case err != nil:
		fmt.Fprintln(stderr, "cobranca:", err)
		usage(stderr, args[0])
		return exitUsage
	}
	fs := &flagSet{FlagSet: flag.NewFlagSet(c.name, flag.ContinueOnError), cmd: c, e: e}
	fs.SetOutput(stderr)
	fs.Usage = func() {} // parse prints the help, to stdout when asked for
	err = c.run(ctx, e, fs, rest)
	if errors.Is(err, errHelpShown) {
		return nil
	}
	return err
}

func isHelpFlag(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// errHelpGroup: the help of a group of commands ("audit --help").
var errHelpGroup = errors.New("help of a group")

// lookup finds the command args name and returns it with its arguments.
func lookup(args []string) (command, []string, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		args = append([]string{defaultCommand}, args...)
	}
	for _, c := range commands {
		group, word, grouped := strings.Cut(c.name, " ")
		switch {
		case !grouped && c.name == args[0] && c.run != nil:
			return c, args[1:], nil
		case grouped && group == args[0] && len(args) > 1 && word == args[1]:
			return c, args[2:], nil
		}
	}
	switch {
	case !isGroup(args[0]):
		return command{}, nil, fmt.Errorf("unknown command %q", args[0])
	case len(args) == 1:
		return command{}, nil, fmt.Errorf("%s: want a subcommand", args[0])
	case isHelpFlag(args[1]):
		return command{}, nil, errHelpGroup
	}
	return command{}, nil, fmt.Errorf("%s: unknown subcommand %q", args[0], args[1])
}

func isGroup(name string) bool {
	for _, c := range commands {
		if strings.HasPrefix(c.name, name+" ") {
			return true
		}
	}
	return false
}

// usage prints the commands, or only those of group when it is one.
func usage(w io.Writer, group string) {
	fmt.Fprintln(w, "usage: cobranca [command] [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands {
		if isGroup(group) && !strings.HasPrefix(c.name, group+" ") {
			continue
		}
		def := ""
		if c.name == defaultCommand {
			def = " (default)"
		}
		fmt.Fprintf(w, "  %s%s\n      %s\n", c.synopsis(), def, c.summary)
	}
	fmt.Fprintln(w, "\n`cobranca help COMMAND` or `cobranca COMMAND --help` prints a command's flags.")
	fmt.Fprintln(w, "Configuration comes from COBRANCA_* environment variables; see docs/configuration.md.")
}

// flagSet is a command's flags; parse answers -h and --help with the
// command's help.
type flagSet struct {
	*flag.FlagSet
	cmd command
	e   env
}

// errHelpShown ends a command whose help was asked for: run returns nil.
var errHelpShown = errors.New("help shown")

// parse parses args. -h or --help anywhere before a -- terminator print
// the command's help on stdout and return errHelpShown (the flag package
// alone would stop at the first positional argument and never see them); a
// mistake prints the help on stderr and returns exitUsage.
func (fs *flagSet) parse(args []string) error {
	for _, arg := range args {
		if arg == "--" {
			break
		}
		if isHelpFlag(arg) {
			fs.help(fs.e.stdout)
			return errHelpShown
		}
	}
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.help(fs.e.stdout)
		return errHelpShown
	default: // the flag package has said what is wrong
		fs.help(fs.e.stderr)
		return exitUsage
	}
}

// positional parses args whose flags may follow the positional arguments,
// as synopses write them ("files add PATH [--customer ID]"), and returns
// the positional arguments.
func (fs *flagSet) positional(args []string) ([]string, error) {
	var out []string
	for rest := args; ; {
		if err := fs.parse(rest); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return out, nil
		}
		out, rest = append(out, fs.Arg(0)), fs.Args()[1:]
	}
}

// isSet reports whether the command line set flag name (to any value).
func (fs *flagSet) isSet(name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// misuse ends a command whose arguments make no sense: what is wrong and the
// command's help on stderr, and exitUsage.
func (fs *flagSet) misuse(format string, args ...any) error {
	fmt.Fprintf(fs.e.stderr, "%s: %s\n", strings.TrimSpace("cobranca "+fs.cmd.name), fmt.Sprintf(format, args...))
	fs.help(fs.e.stderr)
	return exitUsage
}

func (fs *flagSet) help(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", fs.cmd.synopsis(), fs.cmd.summary)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(w, "\nflags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(fs.e.stderr)
	}
}
