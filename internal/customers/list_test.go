package customers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestList: the console's customers, in id order, in keyset pages of any
// size, of every status or one, each with who set its status, why and
// when; a bad filter is refused naming its field.
func TestList(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		all := map[customers.Status][]string{}
		var every []string
		for i := range 7 {
			id := fmt.Sprintf("C-%02d", 7-i) // written out of id order
			upsert(t, db, customers.Record{ID: id, Name: "Loja " + id, Email: id + "@loja.example"}, t0)
			ch := customers.Change{Status: customers.Contactable, Reason: "pagou", SetBy: "ana"}
			switch i % 3 {
			case 1:
				ch = customers.Change{Status: customers.Paused, PausedUntil: "2027-01-10", Reason: "negociando", SetBy: "ana", SetByActor: "bot"}
			case 2:
				ch = customers.Change{Status: customers.DoNotContact, Reason: "pediu", SetBy: "bia"}
			}
			if i > 0 {
				if _, err := inTx(t, db, func(ctx context.Context, tx store.Tx) (customers.Customer, error) {
					return customers.SetStatus(ctx, tx, id, ch, t0.Add(time.Hour))
				}); err != nil {
					t.Fatal(err)
				}
			}
			all[ch.Status] = append([]string{id}, all[ch.Status]...)
			every = append([]string{id}, every...)
		}
		for _, st := range []customers.Status{"", customers.Contactable, customers.Paused, customers.DoNotContact} {
			want := every
			if st != "" {
				want = all[st]
			}
			for _, limit := range []int{1, 2, customers.MaxPage} {
				var got []string
				f := customers.ListFilter{Status: st, Limit: limit}
				for range 10 {
					page, next, err := customers.List(ctx, db, f)
					if err != nil {
						t.Fatal(err)
					}
					for _, c := range page {
						got = append(got, c.ID)
						if c != get(t, db, c.ID) {
							t.Errorf("List's %s = %+v; Get's %+v", c.ID, c, get(t, db, c.ID))
						}
					}
					if next == "" {
						break
					}
					f.After = next
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("status %q, pages of %d (-want +got):\n%s", st, limit, diff)
				}
			}
		}
		if page, _, err := customers.List(ctx, db, customers.ListFilter{Status: customers.Paused, Limit: 1}); err != nil ||
			page[0].Reason != "negociando" || page[0].SetBy != "ana" || page[0].SetByActor != "bot" || !page[0].SetAt.Equal(t0.Add(time.Hour)) {
			t.Errorf("a paused customer = %+v, %v; want who set it, why and when", page, err)
		}
		for _, tc := range []struct {
			f     customers.ListFilter
			field string
		}{
			{customers.ListFilter{}, "limit"},
			{customers.ListFilter{Limit: customers.MaxPage + 1}, "limit"},
			{customers.ListFilter{Limit: 5, Status: "blocked"}, "status"},
		} {
			_, _, err := customers.List(ctx, db, tc.f)
			if fe, ok := failure.As(err); !ok || fe.Code != failure.InvalidArguments || fe.Field != tc.field {
				t.Errorf("List(%+v) = %v; want invalid_arguments naming %s", tc.f, err, tc.field)
			}
		}
	})
}
