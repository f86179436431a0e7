package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/value"
)

// The console's charts of the ledger (issue 29): the open amount by aging bucket, and the
// cash collected per week. Amounts in different currencies are never added: each comes per
// currency, in currency order.

// AgingBucket is the open amount of one aging bucket.
type AgingBucket struct {
	Name      string // value.AgingBucketNames: "current", "1-30", …
	OpenCents int64
	Invoices  int64
}

// Aging is the open amount of one currency by aging bucket, every bucket present.
type Aging struct {
	Currency string
	Buckets  [len(value.AgingBucketNames)]AgingBucket
}

// agingSQL sums the open amount of the unsettled invoices by currency and due date: at most
// one row per calendar day a currency has invoices due on, which the buckets are made of in Go
// by value.AgingBucket, the rule analyze_portfolio's summary uses.
const agingSQL = `SELECT currency, due_date, CAST(sum(open_cents) AS bigint), count(*)
FROM ledger_invoice
WHERE state IN ('open', 'partially_paid')
GROUP BY currency, due_date`

// OpenByAging returns the open amount of the unsettled invoices (open, partially paid) by
// aging bucket as of asOf (YYYY-MM-DD), per currency.
func OpenByAging(ctx context.Context, q store.Querier, asOf string) ([]Aging, error) {
	if fe := checkDate("asOf", asOf); fe != nil {
		return nil, fe
	}
	today, _ := dayOf(asOf) // checked
	byCurrency := map[string]*Aging{}
	err := scanRows(ctx, q, agingSQL, nil, func(r store.Rows) error {
		var currency, due string
		var cents, n int64
		if err := r.Scan(&currency, &due, &cents, &n); err != nil {
			return err
		}
		a := byCurrency[currency]
		if a == nil {
			a = &Aging{Currency: currency}
			for i, name := range value.AgingBucketNames {
				a.Buckets[i].Name = name
			}
			byCurrency[currency] = a
		}
		day, err := dayOf(due)
		if err != nil {
			return err
		}
		b := &a.Buckets[value.AgingBucket(today-day)]
		b.OpenCents += cents
		b.Invoices += n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: open amount by aging: %w", err)
	}
	out := make([]Aging, 0, len(byCurrency))
	for _, a := range byCurrency {
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b Aging) int { return cmp.Compare(a.Currency, b.Currency) })
	return out, nil
}

// MaxCashWeeks bounds CashCollected's weeks: two years.
const MaxCashWeeks = 104

// WeekCash is what was collected in one week.
type WeekCash struct {
	Week     string // its Monday, YYYY-MM-DD
	Cents    int64  // allocated to invoices, of the payments made in the week
	Payments int64  // the payments made in the week with something allocated
}

// CashWeeks is the cash collected in one currency, week by week, every week present.
type CashWeeks struct {
	Currency string
	Weeks    []WeekCash
}

// cashSQL sums what is allocated of the payments paid from $1 to before $2, by currency and
// day paid: one row per day and currency at most, from ledger_payment_paid_on alone. What a
// payment has allocated is its amount less what it has left (the ledger keeps left_cents so:
// see ledgerChange.allocate), which spares joining 80 000 allocations a quarter.
const cashSQL = `SELECT currency, paid_on, CAST(sum(amount_cents - left_cents) AS bigint), count(*)
FROM ledger_payment
WHERE paid_on >= $1 AND paid_on < $2 AND left_cents < amount_cents
GROUP BY currency, paid_on`

// CashCollected returns the cash collected — the amounts allocated to invoices, by the date
// the payment was made — in the weeks weeks (Monday to Sunday) up to the one of through
// (YYYY-MM-DD), oldest first, per currency. A payment not matched to an invoice is not
// collected yet: it counts from its allocation, in the week it was paid.
func CashCollected(ctx context.Context, q store.Querier, through string, weeks int) ([]CashWeeks, error) {
	if fe := checkDate("through", through); fe != nil {
		return nil, fe
	}
	if weeks < 1 || weeks > MaxCashWeeks {
		return nil, &FieldError{Field: "weeks", Code: CodeOutOfRange, Message: fmt.Sprintf("must be 1 to %d", MaxCashWeeks)}
	}
	end, _ := dayOf(through) // checked
	end += 7 - weekday(end)  // the Monday after through's week
	start := end - 7*weeks
	byCurrency := map[string]*CashWeeks{}
	err := scanRows(ctx, q, cashSQL, []any{dateOf(start), dateOf(end)}, func(r store.Rows) error {
		var currency, paid string
		var cents, n int64
		if err := r.Scan(&currency, &paid, &cents, &n); err != nil {
			return err
		}
		c := byCurrency[currency]
		if c == nil {
			c = &CashWeeks{Currency: currency, Weeks: make([]WeekCash, weeks)}
			for i := range c.Weeks {
				c.Weeks[i].Week = dateOf(start + 7*i)
			}
			byCurrency[currency] = c
		}
		day, err := dayOf(paid)
		if err != nil || day < start || day >= end {
			return fmt.Errorf("a payment paid on %q is outside the weeks asked for", paid)
		}
		w := &c.Weeks[(day-start)/7]
		w.Cents += cents
		w.Payments += n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: cash collected: %w", err)
	}
	out := make([]CashWeeks, 0, len(byCurrency))
	for _, c := range byCurrency {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b CashWeeks) int { return cmp.Compare(a.Currency, b.Currency) })
	return out, nil
}

// dayOf is the day number (days since 1970-01-01) of a date YYYY-MM-DD.
func dayOf(date string) (int, error) {
	t, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return 0, fmt.Errorf("a stored date: %w", err)
	}
	return int(t.Unix() / 86400), nil
}

func dateOf(day int) string { return time.Unix(int64(day)*86400, 0).UTC().Format(time.DateOnly) }

// weekday is day's place in its week, Monday 0 (1970-01-01 was a Thursday).
func weekday(day int) int { return ((day+3)%7 + 7) % 7 }
