package main

import (
	"os"
	"os/user"
	"strconv"

	"github.com/cobranca/cobranca/internal/auditlog"
)

// cliClientID is the client id of the audit events of admin commands: what
// the CLI did, as against a token's client.
const cliClientID = "cobranca-cli"

// adminEvent is the audit event of an admin command run by the operating
// system user running cobranca (its login name, or "uid:N" when the system
// knows no name): the person at the console answers for it. No environment
// variable overrides it, so that an event never names someone the command
// only claims to be.
func adminEvent(name string, outcome auditlog.Outcome) auditlog.Event {
	return auditlog.Event{Name: name, Subject: operator(), ClientID: cliClientID, Outcome: outcome}
}

// operator is the operating system user running cobranca: its login name,
// or "uid:N" when the system knows no name. Admin commands record it as who
// acted, in their audit events and on the rows they write.
func operator() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "uid:" + strconv.Itoa(os.Getuid())
}
