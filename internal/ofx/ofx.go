// Package ofx reads bank statements in OFX (1.x SGML and 2.x XML, through
// github.com/aclindsa/ofxgo) for the credits that may be customers'
// payments: every transaction with a positive amount on a bank account's
// statement. Debits are counted and left out.
//
// Errors never quote the file: a statement's content is a customer's
// financial data.
package ofx

import (
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"
	"time"

	"github.com/aclindsa/ofxgo"
)

// Credit is one credit on a statement.
type Credit struct {
	Index       int    // the transaction's position among the statement's STMTTRN, 1-based
	Account     string // BANKID/ACCTID of the statement's account
	FITID       string // the bank's unique id of the transaction
	PostedOn    string // YYYY-MM-DD, in the offset the bank wrote
	AmountCents int64  // in the currency's minor units
	Currency    string // ISO 4217
	Type        string // OFX TRNTYPE: CREDIT, DEP, XFER, DIRECTDEP…
	Name        string
	Memo        string
	RefNum      string
}

// Statement is what Read found.
type Statement struct {
	Credits []Credit
	Debits  int // transactions left out: zero or negative amounts
}

// Error is a problem of a statement: the transaction (0 for the file) and
// the OFX element, never their content.
type Error struct {
	Transaction int
	Element     string
	Reason      string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Transaction > 0 {
		fmt.Fprintf(&b, "transaction %d: ", e.Transaction)
	}
	if e.Element != "" {
		b.WriteString(e.Element + ": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// MaxBytes bounds the statement Read takes.
const MaxBytes = 64 << 20

// Read reads a bank statement. minorUnits gives a currency's minor units
// (false for a currency it does not know); an amount with more decimals
// than its currency has is refused rather than rounded.
func Read(r io.Reader, minorUnits func(code string) (int, bool)) (*Statement, error) {
	lr := &io.LimitedReader{R: r, N: MaxBytes + 1}
	resp, err := ofxgo.ParseResponse(lr)
	if lr.N <= 0 {
		return nil, &Error{Reason: fmt.Sprintf("the file is larger than %d bytes", MaxBytes)}
	}
	if err != nil {
		// ofxgo's messages may quote the file: none of it is passed on.
		return nil, &Error{Reason: "not a valid OFX statement (OFX 1.x SGML or 2.x XML)"}
	}
	var st Statement
	seen := make(map[string]int)
	n := 0
	for _, m := range resp.Bank {
		sr, ok := m.(*ofxgo.StatementResponse)
		if !ok || sr.BankTranList == nil {
			continue
		}
		account := strings.TrimSpace(string(sr.BankAcctFrom.BankID)) + "/" + strings.TrimSpace(string(sr.BankAcctFrom.AcctID))
		for _, t := range sr.BankTranList.Transactions {
			n++
			if t.TrnAmt.Sign() <= 0 {
				st.Debits++
				continue
			}
			cur := sr.CurDef.String()
			if t.Currency != nil && t.Currency.CurSym.String() != "" {
				cur = t.Currency.CurSym.String()
			}
			units, ok := minorUnits(cur)
			if !ok {
				return nil, &Error{Transaction: n, Element: "CURDEF", Reason: "not an ISO 4217 currency this server knows"}
			}
			cents, ok := minor(&t.TrnAmt.Rat, units)
			if !ok {
				return nil, &Error{Transaction: n, Element: "TRNAMT", Reason: fmt.Sprintf("has more than %d decimal places, or is too large", units)}
			}
			fitid := strings.TrimSpace(string(t.FiTID))
			key := account + "\x00" + fitid
			if first, dup := seen[key]; dup {
				return nil, &Error{Transaction: n, Element: "FITID", Reason: fmt.Sprintf("repeats transaction %d's", first)}
			}
			seen[key] = n
			st.Credits = append(st.Credits, Credit{
				Index:       n,
				Account:     account,
				FITID:       fitid,
				PostedOn:    t.DtPosted.Format(time.DateOnly),
				AmountCents: cents,
				Currency:    cur,
				Type:        t.TrnType.String(),
				Name:        strings.TrimSpace(string(t.Name)),
				Memo:        strings.TrimSpace(string(t.Memo)),
				RefNum:      strings.TrimSpace(string(t.RefNum)),
			})
		}
	}
	if n == 0 {
		return nil, &Error{Element: "BANKTRANLIST", Reason: "the file holds no bank statement transaction"}
	}
	return &st, nil
}

// maxCents bounds an amount read (R$ 10 billion, as everywhere else).
var maxCents = big.NewInt(1_000_000_000_000)

// minor is r in minor units, when exact and within bounds.
func minor(r *big.Rat, units int) (int64, bool) {
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(units)), nil)))
	if !scaled.IsInt() || scaled.Num().CmpAbs(maxCents) > 0 {
		return 0, false
	}
	return scaled.Num().Int64(), true
}

// IsError reports whether err is a statement's problem rather than a read
// failure.
func IsError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
