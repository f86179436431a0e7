package web_test

import (
	"testing"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/web"
)

// TestRoleNames: the console's approver and write-off roles are the ones the tools' contracts
// name.
func TestRoleNames(t *testing.T) {
	if web.RoleApprover != collections.ApproverRole || web.RoleWriteOff != collections.WriteOffRole {
		t.Errorf("web roles %s, %s; the contracts' %s, %s", web.RoleApprover, web.RoleWriteOff, collections.ApproverRole, collections.WriteOffRole)
	}
}
