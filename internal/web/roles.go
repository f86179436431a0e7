package web

import (
	"slices"

	"github.com/cobranca/cobranca/internal/auth"
)

// The finance team's roles, as the issuer's roles claim names them (COBRANCA_ROLES_CLAIM).
// RoleApprover and RoleWriteOff are the roles the contracts of send_reminder and
// write_off_invoice name (collections.ApproverRole, collections.WriteOffRole; a test holds
// them equal): the console names them here without importing the tools.
const (
	RoleViewer   = "collections.viewer"
	RoleOperator = "collections.operator"
	RoleApprover = "collections.approver"
	RoleWriteOff = "collections.write_off"
)

// Roles are the console's roles, for the development sign-in page's roles field.
var Roles = []string{RoleViewer, RoleOperator, RoleApprover, RoleWriteOff}

// permission is one thing the console lets a person do.
type permission string

const (
	// readConsole: open the console's pages (everything but customers' message bodies).
	readConsole permission = "read"
	// readBodies: read the bodies of messages to customers (drafts, sends, previews).
	readBodies permission = "read_bodies"
	// matchPayments: match an unmatched payment to an invoice.
	matchPayments permission = "match_payments"
	// importFiles: import bank and ledger files from the browser.
	importFiles permission = "import_files"
	// decideApprovals: approve or reject a pending call (the approval page; the contract's
	// approverRoles decide, through approval.Decider.DecideAs).
	decideApprovals permission = "decide_approvals"
	// writeOff: write an invoice off (the write-off page; the contract's adminRoles decide).
	writeOff permission = "write_off"
	// verifyAudit: verify the audit chain from the trail page (it walks the whole chain).
	verifyAudit permission = "verify_audit"
	// pauseSchedules: pause a collection schedule (pause_schedule). Stopping is always safe, so
	// whoever runs the day's work or approves its batches may do it.
	pauseSchedules permission = "pause_schedules"
	// resumeSchedules: resume a paused collection schedule (resume_schedule, high tier): its
	// batches are prepared again, so only who approves them may restart them.
	resumeSchedules permission = "resume_schedules"
)

// grants is the one rule of who may do what in the console: each role and what it grants.
// A person holds what any of their roles grants; an agent's session holds nothing, whatever
// its roles say. The pages show an action only to who may do it, and every action checks it
// again (the approval and write-off pages through the tool's contract, which names the
// same roles).
var grants = map[string][]permission{
	RoleViewer:   {readConsole},
	RoleOperator: {readConsole, readBodies, matchPayments, importFiles, verifyAudit, pauseSchedules},
	RoleApprover: {readConsole, readBodies, decideApprovals, verifyAudit, pauseSchedules, resumeSchedules},
	RoleWriteOff: {readConsole, readBodies, writeOff, verifyAudit},
}

// may reports whether pr may do what needs perm: a person holding a role that grants it.
func may(pr *auth.Principal, perm permission) bool {
	if pr == nil || pr.IsAgent() {
		return false
	}
	for _, role := range pr.Roles {
		if slices.Contains(grants[role], perm) {
			return true
		}
	}
	return false
}
