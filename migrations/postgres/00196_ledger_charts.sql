-- The console's ledger charts (issue 29, ledger.OpenByAging and ledger.CashCollected), each
-- read from an index alone (docs/benchmarks.md, "Ledger: the console's charts"):
--
-- ledger_invoice_aging: the open amount of the unsettled invoices by currency and due date,
-- an index-only scan in (currency, due_date) order that aggregates without sorting.
-- ledger_payment_paid_on: what the payments of a range of weeks allocated (amount less what is
-- left), by the date paid, an index-only scan.
--
-- What writes pay (issue 31): each is one more entry for an insert. An update of a payment's
-- left_cents was never HOT (ledger_payment_left's predicate reads it): it now writes one index
-- more. An invoice's update that changes its state was never HOT either (ledger_invoice_state);
-- one that changes only its open amount — a partial payment on a partially paid invoice, the
-- rare case — was HOT and no longer is: it writes all twelve of the invoice's indexes.

-- +goose Up
CREATE INDEX ledger_invoice_aging ON ledger_invoice (currency, due_date) INCLUDE (open_cents)
    WHERE state IN ('open', 'partially_paid');
CREATE INDEX ledger_payment_paid_on ON ledger_payment (paid_on, currency) INCLUDE (amount_cents, left_cents);

-- +goose Down
DROP INDEX ledger_payment_paid_on;
DROP INDEX ledger_invoice_aging;
