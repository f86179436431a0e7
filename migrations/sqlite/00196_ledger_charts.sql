-- The console's ledger charts (issue 29); see the PostgreSQL migration of the same number.
-- SQLite has no INCLUDE: the amounts are the covering indexes' last key columns.

-- +goose Up
CREATE INDEX ledger_invoice_aging ON ledger_invoice (currency, due_date, open_cents)
    WHERE state IN ('open', 'partially_paid');
CREATE INDEX ledger_payment_paid_on ON ledger_payment (paid_on, currency, amount_cents, left_cents);

-- +goose Down
DROP INDEX ledger_payment_paid_on;
DROP INDEX ledger_invoice_aging;
