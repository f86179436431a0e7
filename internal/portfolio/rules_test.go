package portfolio

import (
	"errors"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/value"
)

// One table test per rule of issue 15. asOf is 2026-11-29 throughout.
const rulesAsOf = "2026-11-29"

// day is rulesAsOf moved by n days.
func day(n int) string {
	d, _ := time.Parse(time.DateOnly, rulesAsOf)
	return d.AddDate(0, 0, n).Format(time.DateOnly)
}

// open is an open invoice of customer cust, due n days after asOf.
func open(id, cust string, due int, cents int64) Invoice {
	return inv(id, cust, day(due), cents, StatusOpen, false)
}

func disputed(x Invoice) Invoice { x.Details().Disputed = true; return x }

func promised(x Invoice, n int) Invoice { x.Details().PromiseToPayDate = day(n); return x }

func in(x Invoice, currency string) Invoice { x.Details().Currency = currency; return x }

// analyzed validates and analyzes a portfolio of asOf rulesAsOf.
func analyzed(t *testing.T, p *Input, o Options) Analysis {
	t.Helper()
	p.AsOf = rulesAsOf
	if err := Validate(p); err != nil {
		t.Fatalf("Validate = %v", err)
	}
	return AnalyzeWith(p, o)
}

// queueOf is the accounts as "id amount count".
type queued struct {
	ID     string
	Amount int64
	Count  int
}

func queueOf(a Analysis) []queued {
	q := []queued{}
	for _, x := range a.Accounts {
		q = append(q, queued{x.CustomerID, x.AmountCents, int(x.InvoiceCount)})
	}
	return q
}

func TestRuleDispute(t *testing.T) {
	tests := []struct {
		name  string
		invs  []Invoice
		queue []queued
		total int64
		left  Count
	}{
		{"a disputed overdue invoice leaves the queue, not the total",
			[]Invoice{disputed(open("1", "a", -10, 500)), open("2", "a", 5, 300)},
			[]queued{}, 800, Count{Invoices: 1, Customers: 1}},
		{"the rest of the account stays, without the disputed amount",
			[]Invoice{disputed(open("1", "a", -40, 500)), open("2", "a", -3, 300), open("3", "a", 9, 100)},
			[]queued{{"a", 400, 2}}, 900, Count{Invoices: 1, Customers: 0}},
		{"a disputed invoice not yet due does not make a disputed customer",
			[]Invoice{disputed(open("1", "a", 10, 500))},
			[]queued{}, 500, Count{Invoices: 1, Customers: 0}},
		{"disputed paid and void invoices are paid and void",
			[]Invoice{disputed(inv("1", "a", day(-10), 5, StatusPaid, false)), disputed(inv("2", "b", day(-10), 5, StatusVoid, false)), open("3", "c", -1, 7)},
			[]queued{{"c", 7, 1}}, 7, Count{}},
		{"a dispute reason changes nothing",
			[]Invoice{func() Invoice { x := disputed(open("1", "a", -10, 500)); x.DisputeReason = "avaria"; return x }(), open("2", "b", -1, 1)},
			[]queued{{"b", 1, 1}}, 501, Count{Invoices: 1, Customers: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := analyzed(t, &Input{Invoices: tt.invs}, Options{})
			if diff := gocmp.Diff(tt.queue, queueOf(a)); diff != "" {
				t.Errorf("Analyze(%s) accounts (-want +got):\n%s", tt.name, diff)
			}
			if a.TotalOpenCents != tt.total || a.Summary.LeftOut.Disputed != tt.left {
				t.Errorf("Analyze(%s) = total %d, left out disputed %+v; want %d, %+v", tt.name, a.TotalOpenCents, a.Summary.LeftOut.Disputed, tt.total, tt.left)
			}
		})
	}
}

func TestRulePromisePending(t *testing.T) {
	tests := []struct {
		name  string
		invs  []Invoice
		queue []queued
		left  Count
	}{
		{"a promise for today pauses the account",
			[]Invoice{promised(open("1", "a", -20, 500), 0), open("2", "b", -1, 9)},
			[]queued{{"b", 9, 1}}, Count{Invoices: 1, Customers: 1}},
		{"a promise on an invoice not yet due pauses the whole account",
			[]Invoice{open("1", "a", -20, 500), promised(open("2", "a", 3, 100), 7)},
			[]queued{}, Count{Invoices: 1, Customers: 1}},
		{"two promised invoices count twice, the customer once",
			[]Invoice{promised(open("1", "a", -20, 500), 1), promised(open("2", "a", -2, 100), 30)},
			[]queued{}, Count{Invoices: 2, Customers: 1}},
		{"a paused account with nothing overdue is not a left-out customer",
			[]Invoice{promised(open("1", "a", 5, 500), 9)},
			[]queued{}, Count{Invoices: 1, Customers: 0}},
		{"a promise on a disputed invoice pauses nothing",
			[]Invoice{disputed(promised(open("1", "a", -5, 500), 9)), open("2", "a", -1, 1)},
			[]queued{{"a", 1, 1}}, Count{}},
		{"a promise on a paid invoice pauses nothing",
			[]Invoice{promised(inv("1", "a", day(-5), 500, StatusPaid, false), 9), open("2", "a", -1, 1)},
			[]queued{{"a", 1, 1}}, Count{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := analyzed(t, &Input{Invoices: tt.invs}, Options{})
			if diff := gocmp.Diff(tt.queue, queueOf(a)); diff != "" {
				t.Errorf("Analyze(%s) accounts (-want +got):\n%s", tt.name, diff)
			}
			if a.Summary.LeftOut.PromisePending != tt.left {
				t.Errorf("Analyze(%s) left out promisePending = %+v, want %+v", tt.name, a.Summary.LeftOut.PromisePending, tt.left)
			}
		})
	}
}

func TestRuleBrokenPromise(t *testing.T) {
	tests := []struct {
		name     string
		invs     []Invoice
		priority Priority
		factors  []Factor
		reason   string // "" when a is not listed
	}{
		{"medium becomes high, with the days since the promise",
			[]Invoice{promised(open("1", "a", -5, 100), -2)},
			PriorityHigh, []Factor{{FactorBrokenPromise, 2}},
			"5 days overdue with R$\u00a01,00 open; broken promise to pay of " + day(-2)},
		{"the latest broken promise counts",
			[]Invoice{promised(open("1", "a", -50, 100), -40), promised(open("2", "a", 5, 100), -1), promised(open("3", "a", -9, 100), -30)},
			PriorityHigh, []Factor{{FactorDaysOverdue, 50}, {FactorBrokenPromise, 1}},
			"50 days overdue with R$\u00a03,00 open; broken promise to pay of " + day(-1)},
		{"high stays high, and says why",
			[]Invoice{promised(open("1", "a", -1, 300_000), -1)},
			PriorityHigh, []Factor{{FactorOpenAmount, 300_000}, {FactorBrokenPromise, 1}},
			"1 days overdue with R$\u00a03.000,00 open; broken promise to pay of " + day(-1)},
		{"no broken promise: medium",
			[]Invoice{open("1", "a", -1, 100)},
			PriorityMedium, []Factor{},
			"1 days overdue with R$\u00a01,00 open"},
		{"a broken promise on a disputed invoice does not count",
			[]Invoice{disputed(promised(open("1", "a", -5, 100), -2)), open("2", "a", -1, 100)},
			PriorityMedium, []Factor{},
			"1 days overdue with R$\u00a01,00 open"},
		{"a paused account is not listed, broken promise or not",
			[]Invoice{promised(open("1", "a", -5, 100), -2), promised(open("2", "a", -1, 100), 2)},
			"", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := analyzed(t, &Input{Invoices: tt.invs}, Options{})
			if tt.reason == "" {
				if len(a.Accounts) != 0 {
					t.Fatalf("Analyze(%s) = %+v, want no account", tt.name, a.Accounts)
				}
				return
			}
			if len(a.Accounts) != 1 {
				t.Fatalf("Analyze(%s) = %+v, want one account", tt.name, a.Accounts)
			}
			x := a.Accounts[0]
			wantAction := ActionPrepareReminder
			if tt.priority == PriorityHigh {
				wantAction = ActionHumanReview
			}
			if x.Priority != tt.priority || x.RecommendedAction != wantAction || x.Reason != tt.reason {
				t.Errorf("Analyze(%s) = %s, %s, %q; want %s, %s, %q", tt.name, x.Priority, x.RecommendedAction, x.Reason, tt.priority, wantAction, tt.reason)
			}
			if diff := gocmp.Diff(tt.factors, x.PriorityFactors); diff != "" {
				t.Errorf("Analyze(%s) factors (-want +got):\n%s", tt.name, diff)
			}
		})
	}
}

func TestRuleConversion(t *testing.T) {
	usd := ExchangeRate{Currency: "USD", Rate: Decimal{517, 2}, Date: day(-1)}
	tests := []struct {
		name    string
		p       Input
		amount  int64 // of the one account, in the base currency
		reason  string
		convs   []Conversion
		summary []ExchangeRate
	}{
		{"USD to BRL, with the rate shown",
			Input{Invoices: []Invoice{in(open("1", "a", -3, 100_000), "USD"), open("2", "a", -1, 50)}, Rates: []ExchangeRate{usd}},
			517_050, "3 days overdue with R$\u00a05.170,50 open; US$\u00a01.000,00 at 5,17 (" + day(-1) + ")",
			[]Conversion{{"USD", 100_000, Decimal{517, 2}, day(-1), 517_000}}, []ExchangeRate{usd}},
		{"each invoice converted, then summed; half up",
			// 1 cent × 0.5 = 0.5 → 1, twice; together they would be 1.
			Input{Invoices: []Invoice{in(open("1", "a", -3, 1), "USD"), in(open("2", "a", -3, 1), "USD")},
				Rates: []ExchangeRate{{Currency: "USD", Rate: Decimal{5, 1}, Date: day(0)}}},
			2, "3 days overdue with R$\u00a00,02 open; US$\u00a00,02 at 0,5 (" + day(0) + ")",
			[]Conversion{{"USD", 2, Decimal{5, 1}, day(0), 2}}, []ExchangeRate{{Currency: "USD", Rate: Decimal{5, 1}, Date: day(0)}}},
		{"exponents: JPY (0) and KWD (3) to BRL (2), currencies in code order",
			// 1.000 JPY × 0,0345 = R$ 34,50; 1,234 KWD × 16,5 = R$ 20,361 → 20,36.
			Input{Invoices: []Invoice{in(open("1", "a", -3, 1_000), "KWD"), in(open("2", "a", -3, 1_000), "JPY"), in(open("3", "a", -3, 234), "KWD")},
				Rates: []ExchangeRate{{Currency: "KWD", Rate: Decimal{165, 1}, Date: day(-2)}, {Currency: "JPY", Rate: Decimal{345, 4}, Date: day(-2)}}},
			5_486, "3 days overdue with R$\u00a054,86 open; JP¥\u00a01.000 at 0,0345 (" + day(-2) + "); KWD\u00a01,234 at 16,5 (" + day(-2) + ")",
			// Per invoice: KWD 1,000 → 16,50; KWD 0,234 → 3,861 → 3,86.
			[]Conversion{{"JPY", 1_000, Decimal{345, 4}, day(-2), 3_450}, {"KWD", 1_234, Decimal{165, 1}, day(-2), 2_036}},
			[]ExchangeRate{{Currency: "JPY", Rate: Decimal{345, 4}, Date: day(-2)}, {Currency: "KWD", Rate: Decimal{165, 1}, Date: day(-2)}}},
		{"a JPY base: BRL needs a rate, amounts in yen",
			// R$ 1,00 × 28,5 = JP¥ 28,5 → 29.
			Input{BaseCurrency: "JPY", Invoices: []Invoice{open("1", "a", -3, 100), in(open("2", "a", -3, 7), "JPY")},
				Rates: []ExchangeRate{{Currency: "BRL", Rate: Decimal{285, 1}, Date: day(-2)}, {Currency: "USD", Rate: Decimal{150, 0}, Date: day(-2)}}},
			36, "3 days overdue with JP¥\u00a036 open; R$\u00a01,00 at 28,5 (" + day(-2) + ")",
			[]Conversion{{"BRL", 100, Decimal{285, 1}, day(-2), 29}},
			[]ExchangeRate{{Currency: "BRL", Rate: Decimal{285, 1}, Date: day(-2)}}},
		{"CLF (4) to a EUR base, grouped rate digits",
			// 1,2345 CLF × 1.234,5 = € 1.523,99 (1523.99025).
			Input{BaseCurrency: "EUR", Invoices: []Invoice{in(open("1", "a", -3, 12_345), "CLF")},
				Rates: []ExchangeRate{{Currency: "CLF", Rate: Decimal{12345, 1}, Date: day(-2)}}},
			152_399, "3 days overdue with €\u00a01.523,99 open; CLF\u00a01,2345 at 1.234,5 (" + day(-2) + ")",
			[]Conversion{{"CLF", 12_345, Decimal{12345, 1}, day(-2), 152_399}},
			[]ExchangeRate{{Currency: "CLF", Rate: Decimal{12345, 1}, Date: day(-2)}}},
		{"a rate used only by a blocked customer is not in the summary",
			Input{Invoices: []Invoice{open("1", "a", -3, 100), func() Invoice { x := in(open("2", "b", -3, 100), "USD"); x.DoNotContact = true; return x }()},
				Rates: []ExchangeRate{usd}},
			100, "3 days overdue with R$\u00a01,00 open", nil, []ExchangeRate{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := analyzed(t, &tt.p, Options{})
			if len(a.Accounts) != 1 {
				t.Fatalf("Analyze(%s) = %+v, want one account", tt.name, a.Accounts)
			}
			x := a.Accounts[0]
			if x.AmountCents != tt.amount || x.Reason != tt.reason {
				t.Errorf("Analyze(%s) = %d, %q; want %d, %q", tt.name, x.AmountCents, x.Reason, tt.amount, tt.reason)
			}
			if diff := gocmp.Diff(tt.convs, detailsOf(&x).Conversions); diff != "" {
				t.Errorf("Analyze(%s) conversions (-want +got):\n%s", tt.name, diff)
			}
			if diff := gocmp.Diff(tt.summary, a.Summary.Rates); diff != "" {
				t.Errorf("Analyze(%s) summary rates (-want +got):\n%s", tt.name, diff)
			}
			if want := codeOrBase(tt.p.BaseCurrency); a.Summary.BaseCurrency != want {
				t.Errorf("Analyze(%s) base currency %q, want %q", tt.name, a.Summary.BaseCurrency, want)
			}
		})
	}
}

func TestRuleConversionErrors(t *testing.T) {
	tests := []struct {
		name    string
		p       Input
		code    Code
		field   string
		message string
	}{
		{"no rate", Input{Invoices: []Invoice{open("1", "a", -3, 1), in(open("2", "a", -3, 1), "USD")}},
			CodeMissingRate, "invoices[1].currency", `"USD" has no rate to BRL in rates`},
		{"BRL under another base needs a rate", Input{BaseCurrency: "USD", Invoices: []Invoice{in(open("1", "a", -3, 1), "USD"), open("2", "a", -3, 1)}},
			CodeMissingRate, "invoices[1].currency", `"BRL" has no rate to USD in rates`},
		{"rounds to 0", Input{Invoices: []Invoice{in(open("1", "a", -3, 1), "USD")}, Rates: []ExchangeRate{{Currency: "USD", Rate: Decimal{4, 1}, Date: day(0)}}},
			CodeOutOfRange, "invoices[0].amountCents", ""},
		{"above MaxAmountCents", Input{Invoices: []Invoice{in(open("1", "a", -3, value.MaxAmountCents), "USD")}, Rates: []ExchangeRate{{Currency: "USD", Rate: Decimal{2, 0}, Date: day(0)}}},
			CodeOutOfRange, "invoices[0].amountCents", ""},
		{"unknown currency", Input{Invoices: []Invoice{in(open("1", "a", -3, 1), "usd")}}, CodeInvalidValue, "invoices[0].currency", ""},
		{"withdrawn currency", Input{Invoices: []Invoice{in(open("1", "a", -3, 1), "DEM")}}, CodeInvalidValue, "invoices[0].currency", ""},
		{"no minor unit", Input{Invoices: []Invoice{in(open("1", "a", -3, 1), "XAU")}}, CodeInvalidValue, "invoices[0].currency", ""},
		{"unknown base", Input{BaseCurrency: "XXX", Invoices: []Invoice{open("1", "a", -3, 1)}}, CodeInvalidValue, "baseCurrency", ""},
		{"a rate for the base", Input{Invoices: []Invoice{open("1", "a", -3, 1)}, Rates: []ExchangeRate{{Currency: "BRL", Rate: Decimal{1, 0}, Date: day(0)}}},
			CodeInvalidValue, "rates[0].currency", ""},
		{"two rates for one currency", Input{Invoices: []Invoice{open("1", "a", -3, 1)},
			Rates: []ExchangeRate{{Currency: "USD", Rate: Decimal{1, 0}, Date: day(0)}, {Currency: "EUR", Rate: Decimal{1, 0}, Date: day(0)}, {Currency: "USD", Rate: Decimal{2, 0}, Date: day(0)}}},
			CodeDuplicateEntry, "rates[2].currency", ""},
		{"rate 0", Input{Invoices: []Invoice{open("1", "a", -3, 1)}, Rates: []ExchangeRate{{Currency: "USD", Date: day(0)}}}, CodeOutOfRange, "rates[0].rate", ""},
		{"rate above MaxRate", Input{Invoices: []Invoice{open("1", "a", -3, 1)}, Rates: []ExchangeRate{{Currency: "USD", Rate: Decimal{10_000_000_001, 1}, Date: day(0)}}}, CodeOutOfRange, "rates[0].rate", ""},
		{"rate too precise", Input{Invoices: []Invoice{open("1", "a", -3, 1)}, Rates: []ExchangeRate{{Currency: "USD", Rate: Decimal{1, 13}, Date: day(0)}}}, CodeInvalidValue, "rates[0].rate", ""},
		{"rate date", Input{Invoices: []Invoice{open("1", "a", -3, 1)}, Rates: []ExchangeRate{{Currency: "USD", Rate: Decimal{1, 0}, Date: "2026-02-30"}}}, CodeInvalidDate, "rates[0].date", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.AsOf = rulesAsOf
			var e *Error
			if err := Validate(&tt.p); !errors.As(err, &e) || e.Code != tt.code || e.Field != tt.field || tt.message != "" && e.Message != tt.message {
				t.Errorf("Validate(%s) = %v, want %s at %s %q", tt.name, err, tt.code, tt.field, tt.message)
			}
		})
	}
}

// TestConvert: the arithmetic of conversion, at the edges of rounding,
// exponents and range, against naiveConvert (big.Rat).
func TestConvert(t *testing.T) {
	tests := []struct {
		amount   int64
		from     string
		rate     Decimal
		to       string
		want     int64
		wantFail bool
	}{
		{100, "USD", Decimal{517, 2}, "BRL", 517, false},
		{1, "USD", Decimal{5, 1}, "BRL", 1, false},                                          // 0.5 → 1
		{1, "USD", Decimal{4999999999999, 13}, "BRL", 0, true},                              // 0.4999… → 0
		{3, "USD", Decimal{5, 1}, "BRL", 2, false},                                          // 1.5 → 2
		{1, "JPY", Decimal{345, 4}, "BRL", 3, false},                                        // 3.45 → 3
		{1, "JPY", Decimal{355, 4}, "BRL", 4, false},                                        // 3.55 → 4
		{1, "BRL", Decimal{285, 1}, "JPY", 0, true},                                         // 0.285 → 0
		{2, "BRL", Decimal{285, 1}, "JPY", 1, false},                                        // 0.57 → 1
		{1, "KWD", Decimal{165, 1}, "BRL", 2, false},                                        // 1.65 → 2
		{1, "CLF", Decimal{1, 12}, "KWD", 0, true},                                          // tiny
		{10_000, "CLF", Decimal{1, 0}, "JPY", 1, false},                                     // 1 CLF = 1 yen
		{value.MaxAmountCents, "BRL", Decimal{1_000_000_000, 0}, "USD", 0, true},            // far too large
		{value.MaxAmountCents, "JPY", Decimal{1, 0}, "KWD", 0, true},                        // ×1000 too large
		{1_000, "KWD", Decimal{999_999_999_999_999_999, 12}, "JPY", 1_000_000, false},       // 999.999,999… → 1.000.000
		{value.MaxAmountCents, "KWD", Decimal{999_999_999_999_999_999, 12}, "JPY", 0, true}, // 128-bit product, too large
		{value.MaxAmountCents, "USD", Decimal{999_999_999_999, 12}, "BRL", 999_999_999_999, false},
		{value.MaxAmountCents, "CLF", Decimal{999_999_999_999_999_999, 9}, "JPY", 0, true},
		{-1, "USD", Decimal{1, 0}, "BRL", 0, true},
	}
	for _, tt := range tests {
		got, ok := convert(tt.amount, value.CurrencyOf(tt.from).Exp(), tt.rate, value.CurrencyOf(tt.to).Exp())
		if ok == tt.wantFail || ok && got != tt.want {
			t.Errorf("convert(%d %s at %v to %s) = %d, %v; want %d, %v", tt.amount, tt.from, tt.rate, tt.to, got, ok, tt.want, !tt.wantFail)
		}
		if tt.amount > 0 {
			if n := naiveConvert(tt.amount, tt.from, tt.rate, tt.to); ok && n != got || !ok && n >= 1 && n <= value.MaxAmountCents {
				t.Errorf("convert(%d %s at %v to %s) = %d, %v; big.Rat says %d", tt.amount, tt.from, tt.rate, tt.to, got, ok, n)
			}
		}
	}
}

func TestRulePacing(t *testing.T) {
	invs := []Invoice{open("1", "a", -5, 100), open("2", "b", -5, 100), open("3", "c", 5, 100)}
	tests := []struct {
		name   string
		last   string
		pacing time.Duration
		want   string
	}{
		{"a date is its start in UTC", day(-2), 72 * time.Hour, day(1) + "T00:00:00Z"},
		{"next exactly at the start of asOf is not after it", day(-3), 72 * time.Hour, ""},
		{"one second later is", day(-3) + "T00:00:01Z", 72 * time.Hour, day(0) + "T00:00:01Z"},
		{"an offset is turned to UTC", day(-1) + "T22:30:00-03:00", 24 * time.Hour, day(1) + "T01:30:00Z"},
		{"fractions of a second are dropped", day(-1) + "T10:00:00.999+00:00", 24 * time.Hour, day(0) + "T10:00:00Z"},
		{"long ago", "2020-01-01", 72 * time.Hour, ""},
		{"no pacing", day(-1), 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Input{Invoices: invs, Customers: []Contact{{CustomerID: "a", LastContactedAt: tt.last}, {CustomerID: "c", LastContactedAt: tt.last}, {CustomerID: "zz", LastContactedAt: tt.last}}}
			a := analyzed(t, p, Options{ContactPacing: tt.pacing})
			got := map[string]string{}
			for _, x := range a.Accounts {
				got[x.CustomerID] = detailsOf(&x).NextContactAfter
			}
			if diff := gocmp.Diff(map[string]string{"a": tt.want, "b": ""}, got); diff != "" {
				t.Errorf("Analyze(%s) nextContactAfter (-want +got):\n%s", tt.name, diff)
			}
			// Pacing only annotates: the queue is the same without it.
			plain := AnalyzeWith(p, Options{})
			for i := range plain.Accounts {
				plain.Accounts[i].AccountDetails = a.Accounts[i].AccountDetails
			}
			if diff := gocmp.Diff(plain, a); diff != "" {
				t.Errorf("Analyze(%s) with pacing differs beyond nextContactAfter:\n%s", tt.name, diff)
			}
		})
	}
}

func TestRuleAgingBuckets(t *testing.T) {
	// Days past due → bucket, at every edge.
	edges := []struct {
		days int
		want Bucket
	}{{-30, BucketCurrent}, {0, BucketCurrent}, {1, Bucket1To30}, {30, Bucket1To30}, {31, Bucket31To60}, {60, Bucket31To60},
		{61, Bucket61To90}, {90, Bucket61To90}, {91, BucketOver90}, {3000, BucketOver90}}
	var invs []Invoice
	want := map[Bucket]AgingBucket{}
	for i, e := range edges {
		cents := int64(1) << i
		invs = append(invs, open(string(rune('a'+i)), string(rune('a'+i)), -e.days, cents))
		b := want[e.want]
		b.Bucket, b.AmountCents, b.InvoiceCount = e.want, b.AmountCents+cents, b.InvoiceCount+1
		want[e.want] = b
	}
	a := analyzed(t, &Input{Invoices: invs}, Options{})
	var wantAging []AgingBucket
	for _, b := range []Bucket{BucketCurrent, Bucket1To30, Bucket31To60, Bucket61To90, BucketOver90} {
		wantAging = append(wantAging, want[b])
	}
	if diff := gocmp.Diff(wantAging, a.Summary.Aging); diff != "" {
		t.Errorf("aging (-want +got):\n%s", diff)
	}
	for _, x := range a.Accounts {
		if w := edges[x.CustomerID[0]-'a'].want; x.AgingBucket != w {
			t.Errorf("account %s, %d days overdue: bucket %s, want %s", x.CustomerID, x.DaysOverdue, x.AgingBucket, w)
		}
	}
}

func TestRuleLeftOut(t *testing.T) {
	paid := func(id, cust string) Invoice { return inv(id, cust, day(-9), 10, StatusPaid, false) }
	void := func(id, cust string) Invoice { return inv(id, cust, day(-9), 10, StatusVoid, false) }
	blocked := func(x Invoice) Invoice { x.DoNotContact = true; return x }
	tests := []struct {
		name string
		invs []Invoice
		want LeftOut
	}{
		{"doNotContact takes every invoice of the customer, of any status",
			[]Invoice{paid("1", "a"), void("2", "a"), disputed(open("3", "a", -9, 1)), promised(open("4", "a", -9, 1), 3), blocked(paid("5", "a"))},
			LeftOut{DoNotContact: Count{5, 1}}},
		{"paid, then void",
			[]Invoice{paid("1", "a"), void("2", "a"), void("3", "b"), paid("4", "c"), open("5", "c", 3, 1)},
			LeftOut{Paid: Count{2, 1}, Void: Count{2, 1}}},
		{"promisePending before disputed",
			[]Invoice{disputed(open("1", "a", -9, 1)), promised(open("2", "a", -9, 1), 0)},
			LeftOut{Disputed: Count{1, 0}, PromisePending: Count{1, 1}}},
		{"paused with only a disputed invoice overdue: neither",
			[]Invoice{disputed(open("1", "a", -9, 1)), promised(open("2", "a", 9, 1), 10)},
			LeftOut{Disputed: Count{1, 0}, PromisePending: Count{1, 0}}},
		{"disputed before paid",
			[]Invoice{disputed(open("1", "a", -9, 1)), paid("2", "a")},
			LeftOut{Paid: Count{1, 0}, Disputed: Count{1, 1}}},
		{"a listed customer is not left out for its paid invoices",
			[]Invoice{open("1", "a", -9, 1), paid("2", "a"), void("3", "a")},
			LeftOut{Paid: Count{1, 0}, Void: Count{1, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := analyzed(t, &Input{Invoices: tt.invs}, Options{})
			if diff := gocmp.Diff(tt.want, a.Summary.LeftOut); diff != "" {
				t.Errorf("Analyze(%s) left out (-want +got):\n%s", tt.name, diff)
			}
		})
	}
}

// TestNaiveMoney holds the naive restatement's amounts to the shared
// money rule, for the currencies it knows: the reasons it writes are then
// what Analyze writes.
func TestNaiveMoney(t *testing.T) {
	for code := range naiveSymbol {
		for _, amount := range []int64{0, 1, 5, 99, 100, 1234, 12345, 123456, 123456789, value.MaxAmountCents} {
			if got, want := naiveMoney(amount, code), value.FormatMoney(amount, code); got != want {
				t.Errorf("naiveMoney(%d, %s) = %q, want %q", amount, code, got, want)
			}
		}
	}
}
