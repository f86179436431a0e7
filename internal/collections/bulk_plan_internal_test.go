package collections

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/reminders"
)

// TestBulkLimitInMemory: a filter may select reminders.MaxBulk drafts, not one more
// (bulk_too_large on filter), and the preview a person approves of a plan of MaxBulk messages
// stays as short as one of a few. TestBulkTenThousand checks both through the store with
// 10 000 drafts, in the full tier; this checks the same rules in the fast one.
func TestBulkLimitInMemory(t *testing.T) {
	drafts := make([]reminders.Record, reminders.MaxBulk+1)
	for i := range drafts {
		id := fmt.Sprintf("T-%05d", i)
		drafts[i] = reminders.Record{ID: "d_" + id, CustomerID: id, To: reminders.Recipient{Name: "Cliente " + id, Email: "t" + id + "@clientes.example"},
			Tone: reminders.Friendly, Subject: "Lembrete " + id, Body: "Olá Cliente " + id + ",\nsua fatura NF-" + id + " venceu.\n" + strings.Repeat("Texto. ", 80)}
	}
	a := &bulkArgs{Filter: &bulkFilter{}}
	if err := a.checkSelected(drafts[:reminders.MaxBulk]); err != nil {
		t.Errorf("a filter selecting %d drafts: %v, want it taken", reminders.MaxBulk, err)
	}
	var fe *failure.Error
	if err := a.checkSelected(drafts); !errors.As(err, &fe) || fe.Code != reminders.CodeBulkTooLarge || fe.Field != argFilter {
		t.Errorf("a filter selecting %d drafts: %v, want bulk_too_large on filter", reminders.MaxBulk+1, err)
	}

	few := &bulkPlan{send: drafts[:3], hash: "h"}
	all := &bulkPlan{send: drafts[:reminders.MaxBulk], hash: "h"}
	small, big := few.describe(samples(few), time.Second, "rule"), all.describe(samples(all), time.Second, "rule")
	if len(big) > 4000 || len(big) > len(small)+200 {
		t.Errorf("the preview of %d messages is %d bytes, of 3 messages %d: want it bounded", reminders.MaxBulk, len(big), len(small))
	}
}
