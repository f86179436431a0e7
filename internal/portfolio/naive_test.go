package portfolio

import (
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/value/valuetest"
)

// This file restates issue 15's rules naively, from the issue and
// docs/api notes rather than from the package's code: maps, big.Rat,
// the time package and fmt. Analyze is held to it over random extended
// portfolios (TestAnalyzeExtendedMatchesNaive).

// naiveSymbol is the pt-BR symbol CLDR gives the currencies the tests use.
var naiveSymbol = map[string]string{"BRL": "R$", "USD": "US$", "EUR": "€", "GBP": "£", "JPY": "JP¥", "CAD": "CA$",
	"KWD": "KWD", "CLF": "CLF", "CHF": "CHF"}

// naiveRat is the exact value of a rate.
func naiveRat(d Decimal) *big.Rat {
	return new(big.Rat).SetFrac(new(big.Int).SetUint64(d.Coef), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil))
}

// naiveConvert is amount × rate × 10^(exp(to) − exp(from)), rounded half up.
func naiveConvert(amount int64, from string, rate Decimal, to string) int64 {
	v := new(big.Rat).Mul(big.NewRat(amount, 1), naiveRat(rate))
	shift := valuetest.Exp(to) - valuetest.Exp(from)
	p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(shift, -shift))), nil))
	if shift >= 0 {
		v.Mul(v, p)
	} else {
		v.Quo(v, p)
	}
	v.Add(v, big.NewRat(1, 2))
	q := new(big.Int).Quo(v.Num(), v.Denom()) // floor, as v > 0
	return q.Int64()
}

// naiveGroup writes the digits of u grouped in thousands with '.'.
func naiveGroup(whole string) string {
	var groups []string
	for len(whole) > 3 {
		groups = append([]string{whole[len(whole)-3:]}, groups...)
		whole = whole[:len(whole)-3]
	}
	return strings.Join(append([]string{whole}, groups...), ".")
}

// naiveMoney formats an amount of minor units of code as pt-BR does.
func naiveMoney(amount int64, code string) string {
	e := valuetest.Exp(code)
	p := int64(1)
	for range e {
		p *= 10
	}
	s := naiveSymbol[code] + "\u00a0" + naiveGroup(fmt.Sprint(amount/p))
	if e > 0 {
		s += fmt.Sprintf(",%0*d", e, amount%p)
	}
	return s
}

// naiveRate writes a rate with pt-BR digits, trailing zeros dropped.
func naiveRate(d Decimal) string {
	s := naiveRat(d).FloatString(int(d.Scale))
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	whole, frac, _ := strings.Cut(s, ".")
	if frac == "" {
		return naiveGroup(whole)
	}
	return naiveGroup(whole) + "," + frac
}

func naiveDays(from, to string) int {
	f, _ := time.Parse(time.DateOnly, from)
	t, _ := time.Parse(time.DateOnly, to)
	return int(t.Sub(f).Hours() / 24)
}

func naiveBucket(days int) Bucket {
	switch {
	case days <= 0:
		return BucketCurrent
	case days <= 30:
		return Bucket1To30
	case days <= 60:
		return Bucket31To60
	case days <= 90:
		return Bucket61To90
	}
	return BucketOver90
}

// naiveAnalyze is AnalyzeWith restated.
func naiveAnalyze(in *Input, o Options) Analysis {
	base := in.BaseCurrency
	if base == "" {
		base = "BRL"
	}
	code := func(x Invoice) string {
		if x.details().Currency == "" {
			return "BRL"
		}
		return x.details().Currency
	}
	rates := map[string]ExchangeRate{}
	for _, r := range in.Rates {
		rates[r.Currency] = r
	}
	inBase := func(x Invoice) int64 {
		if c := code(x); c != base {
			return naiveConvert(x.AmountCents, c, rates[c].Rate, base)
		}
		return x.AmountCents
	}
	blocked := map[string]bool{}
	var order []string
	byCustomer := map[string][]Invoice{}
	for _, x := range in.Invoices {
		if x.DoNotContact {
			blocked[x.CustomerID] = true
		}
		if _, ok := byCustomer[x.CustomerID]; !ok {
			order = append(order, x.CustomerID)
		}
		byCustomer[x.CustomerID] = append(byCustomer[x.CustomerID], x)
	}
	contacts := map[string]string{}
	for _, c := range in.Customers {
		contacts[c.CustomerID] = c.LastContactedAt
	}
	asOfStart, _ := time.Parse(time.DateOnly, in.AsOf)

	a := Analysis{Accounts: []Account{}, Warnings: refWarnings(in)}
	s := &a.Summary
	s.BaseCurrency = base
	s.PriorityThresholds = Thresholds{DaysOverdue: 14, OpenAmountCents: 200_000}
	for _, b := range []Bucket{BucketCurrent, Bucket1To30, Bucket31To60, Bucket61To90, BucketOver90} {
		s.Aging = append(s.Aging, AgingBucket{Bucket: b})
	}
	usedRates := map[string]bool{}
	for _, id := range order {
		invs := byCustomer[id]
		if blocked[id] {
			s.LeftOut.DoNotContact.Customers++
			s.LeftOut.DoNotContact.Invoices += len(invs)
			continue
		}
		var open, queue []Invoice
		paid, void := 0, 0
		for _, x := range invs {
			if code(x) != base {
				usedRates[code(x)] = true
			}
			switch x.Status {
			case StatusPaid:
				paid++
			case StatusVoid:
				void++
			case StatusOpen:
				open = append(open, x)
				a.TotalOpenCents += inBase(x)
				days := naiveDays(x.DueDate, in.AsOf)
				for i := range s.Aging {
					if s.Aging[i].Bucket == naiveBucket(days) {
						s.Aging[i].AmountCents += inBase(x)
						s.Aging[i].InvoiceCount++
					}
				}
				if !x.details().Disputed {
					queue = append(queue, x)
				}
			}
		}
		s.LeftOut.Paid.Invoices += paid
		s.LeftOut.Void.Invoices += void
		paused, contested, overdue := false, false, false
		latestBroken := ""
		for _, x := range open {
			if x.details().Disputed {
				s.LeftOut.Disputed.Invoices++
				contested = contested || x.DueDate < in.AsOf
				continue
			}
			overdue = overdue || x.DueDate < in.AsOf
			if x.details().PromiseToPayDate == "" {
				continue
			}
			if x.PromiseToPayDate >= in.AsOf {
				s.LeftOut.PromisePending.Invoices++
				paused = true
			} else if x.PromiseToPayDate > latestBroken {
				latestBroken = x.PromiseToPayDate
			}
		}
		switch {
		case overdue && paused:
			s.LeftOut.PromisePending.Customers++
			continue
		case overdue:
		case contested && !paused:
			s.LeftOut.Disputed.Customers++
			continue
		case len(open) > 0:
			continue
		case paid > 0:
			s.LeftOut.Paid.Customers++
			continue
		case void > 0:
			s.LeftOut.Void.Customers++
			continue
		default:
			continue
		}
		acct := Account{CustomerID: id, CustomerName: open[0].CustomerName, InvoiceCount: int32(len(queue))}
		perCurrency := map[string]*Conversion{}
		for _, x := range queue {
			acct.AmountCents += inBase(x)
			if x.DueDate < in.AsOf && (acct.OldestDueDate == "" || x.DueDate < acct.OldestDueDate) {
				acct.OldestDueDate = x.DueDate
			}
			if c := code(x); c != base {
				if perCurrency[c] == nil {
					r := rates[c]
					perCurrency[c] = &Conversion{Currency: c, Rate: r.Rate, RateDate: r.Date}
				}
				perCurrency[c].AmountCents += x.AmountCents
				perCurrency[c].ConvertedCents += inBase(x)
			}
		}
		acct.DaysOverdue = naiveDays(acct.OldestDueDate, in.AsOf)
		acct.AgingBucket = naiveBucket(acct.DaysOverdue)
		high := acct.DaysOverdue >= 14 || acct.AmountCents >= 200_000
		acct.PriorityFactors = []Factor{}
		if acct.DaysOverdue >= 14 {
			acct.PriorityFactors = append(acct.PriorityFactors, Factor{Factor: FactorDaysOverdue, Value: int64(acct.DaysOverdue)})
		}
		if acct.AmountCents >= 200_000 {
			acct.PriorityFactors = append(acct.PriorityFactors, Factor{Factor: FactorOpenAmount, Value: acct.AmountCents})
		}
		if latestBroken != "" {
			acct.PriorityFactors = append(acct.PriorityFactors, Factor{Factor: FactorBrokenPromise, Value: int64(naiveDays(latestBroken, in.AsOf))})
			high = true
		}
		acct.Priority, acct.RecommendedAction = PriorityMedium, ActionPrepareReminder
		if high {
			acct.Priority, acct.RecommendedAction = PriorityHigh, ActionHumanReview
		}
		acct.Reason = fmt.Sprintf("%d days overdue with %s open", acct.DaysOverdue, naiveMoney(acct.AmountCents, base))
		var det AccountDetails // only some accounts have details
		codes := make([]string, 0, len(perCurrency))
		for c := range perCurrency {
			codes = append(codes, c)
		}
		slices.Sort(codes)
		for _, c := range codes {
			cv := perCurrency[c]
			det.Conversions = append(det.Conversions, *cv)
			acct.Reason += fmt.Sprintf("; %s at %s (%s)", naiveMoney(cv.AmountCents, c), naiveRate(cv.Rate), cv.RateDate)
		}
		if latestBroken != "" {
			acct.Reason += "; broken promise to pay of " + latestBroken
		}
		if last, ok := contacts[id]; ok && o.ContactPacing > 0 {
			t, err := time.Parse(time.RFC3339, last)
			if err != nil {
				t, _ = time.Parse(time.DateOnly, last)
			}
			if next := t.Add(o.ContactPacing); next.After(asOfStart) {
				det.NextContactAfter = next.UTC().Format(time.RFC3339)
			}
		}
		if det.Conversions != nil || det.NextContactAfter != "" {
			acct.AccountDetails = &det
		}
		if acct.Priority == PriorityHigh {
			s.AccountsByPriority.High++
		} else {
			s.AccountsByPriority.Medium++
		}
		a.Accounts = append(a.Accounts, acct)
	}
	slices.SortStableFunc(a.Accounts, func(l, r Account) int {
		if l.DaysOverdue != r.DaysOverdue {
			return r.DaysOverdue - l.DaysOverdue
		}
		if l.AmountCents != r.AmountCents {
			if r.AmountCents > l.AmountCents {
				return 1
			}
			return -1
		}
		return strings.Compare(l.CustomerID, r.CustomerID)
	})
	s.Rates = []ExchangeRate{}
	for _, r := range in.Rates {
		if usedRates[r.Currency] {
			s.Rates = append(s.Rates, r)
		}
	}
	slices.SortFunc(s.Rates, func(l, r ExchangeRate) int { return strings.Compare(l.Currency, r.Currency) })
	return a
}
