-- The receivables ledger (internal/ledger); see the PostgreSQL migration of the same number for
-- the design. Times are microseconds since the epoch on the process's clock. SQLite has no
-- roles: allocations and promises refuse UPDATE themselves, and no ledger row may be deleted.

-- +goose Up
CREATE TABLE ledger_invoice (
    id                TEXT    PRIMARY KEY,
    customer_id       TEXT    NOT NULL CHECK (customer_id <> ''),
    customer_name     TEXT    NOT NULL DEFAULT '',
    amount_cents      INTEGER  NOT NULL CHECK (amount_cents > 0),
    currency          TEXT    NOT NULL CHECK (currency <> ''),
    issue_date        TEXT    NOT NULL DEFAULT '',
    due_date          TEXT    NOT NULL CHECK (due_date <> ''),
    void              INTEGER NOT NULL DEFAULT 0 CHECK (void IN (0, 1)),
    pix_txid          TEXT    NOT NULL DEFAULT '',
    our_number        TEXT    NOT NULL DEFAULT '',
    boleto_line       TEXT    NOT NULL DEFAULT '',
    reference         TEXT    NOT NULL DEFAULT '',
    allocated_cents   INTEGER  NOT NULL DEFAULT 0 CHECK (allocated_cents >= 0),
    written_off_cents INTEGER  NOT NULL DEFAULT 0 CHECK (written_off_cents >= 0),
    state             TEXT    NOT NULL CHECK (state IN ('open', 'partially_paid', 'paid', 'void', 'written_off')),
    open_cents        INTEGER  NOT NULL CHECK (open_cents >= 0),
    dispute_id        TEXT    NOT NULL DEFAULT '', -- the open dispute, '' when none
    promise_id        TEXT    NOT NULL DEFAULT '', -- the latest promise, '' when none
    promised_for      TEXT    NOT NULL DEFAULT '', -- its date
    created_at        INTEGER  NOT NULL,
    updated_at        INTEGER  NOT NULL
) WITHOUT ROWID;

-- list_invoices' keyset pages, ordered by (due_date, id): all, by customer, by state.
CREATE INDEX ledger_invoice_due ON ledger_invoice (due_date, id);
CREATE INDEX ledger_invoice_customer ON ledger_invoice (customer_id, due_date, id);
CREATE INDEX ledger_invoice_state ON ledger_invoice (state, due_date, id);
-- The disputed ones, and those with a promise by its date (few of either).
CREATE INDEX ledger_invoice_disputed ON ledger_invoice (due_date, id) WHERE dispute_id <> '';
CREATE INDEX ledger_invoice_promised ON ledger_invoice (promised_for) WHERE promise_id <> '';
-- analyze_ledger and matching read the invoices not settled, by customer.
CREATE INDEX ledger_invoice_unsettled ON ledger_invoice (customer_id, id)
    WHERE state IN ('open', 'partially_paid');
-- Matching by the references the customer was given.
CREATE INDEX ledger_invoice_pix_txid ON ledger_invoice (pix_txid) WHERE pix_txid <> '';
CREATE INDEX ledger_invoice_our_number ON ledger_invoice (our_number) WHERE our_number <> '';
CREATE INDEX ledger_invoice_boleto_line ON ledger_invoice (boleto_line) WHERE boleto_line <> '';
CREATE INDEX ledger_invoice_reference ON ledger_invoice (reference) WHERE reference <> '';

-- A payment's identity is (source, source_ref): importing a file twice adds nothing.
CREATE TABLE ledger_payment (
    id                TEXT   PRIMARY KEY,
    source            TEXT   NOT NULL CHECK (source <> ''),
    source_ref        TEXT   NOT NULL CHECK (source_ref <> ''),
    amount_cents      INTEGER NOT NULL CHECK (amount_cents > 0),
    currency          TEXT   NOT NULL CHECK (currency <> ''),
    paid_on           TEXT   NOT NULL CHECK (paid_on <> ''),
    method            TEXT   NOT NULL CHECK (method IN ('pix', 'boleto', 'transfer', 'card', 'other')),
    reference         TEXT   NOT NULL DEFAULT '',
    customer_id       TEXT   NOT NULL DEFAULT '',
    payer             TEXT   NOT NULL DEFAULT '',
    left_cents        INTEGER NOT NULL CHECK (left_cents >= 0 AND left_cents <= amount_cents),
    recorded_by       TEXT   NOT NULL CHECK (recorded_by <> ''),
    recorded_by_actor TEXT   NOT NULL DEFAULT '',
    created_at        INTEGER NOT NULL,
    UNIQUE (source, source_ref)
) WITHOUT ROWID;

-- The payments with something left (unmatched, or credit), oldest first.
CREATE INDEX ledger_payment_left ON ledger_payment (created_at, id) WHERE left_cents > 0;

CREATE TABLE ledger_allocation (
    payment_id         TEXT   NOT NULL REFERENCES ledger_payment (id),
    invoice_id         TEXT   NOT NULL REFERENCES ledger_invoice (id),
    amount_cents       INTEGER NOT NULL CHECK (amount_cents > 0),
    rule               TEXT   NOT NULL CHECK (rule IN ('reference', 'amount', 'manual')),
    allocated_by       TEXT   NOT NULL CHECK (allocated_by <> ''),
    allocated_by_actor TEXT   NOT NULL DEFAULT '',
    created_at         INTEGER NOT NULL,
    PRIMARY KEY (payment_id, invoice_id)
) WITHOUT ROWID;

CREATE INDEX ledger_allocation_invoice ON ledger_allocation (invoice_id);

CREATE TABLE ledger_promise (
    id                TEXT   PRIMARY KEY,
    invoice_id        TEXT   NOT NULL REFERENCES ledger_invoice (id),
    amount_cents      INTEGER NOT NULL CHECK (amount_cents > 0),
    promised_for      TEXT   NOT NULL CHECK (promised_for <> ''),
    channel           TEXT   NOT NULL CHECK (channel IN ('phone', 'email', 'chat', 'in_person', 'letter', 'other')),
    note              TEXT   NOT NULL DEFAULT '',
    recorded_by       TEXT   NOT NULL CHECK (recorded_by <> ''),
    recorded_by_actor TEXT   NOT NULL DEFAULT '',
    created_at        INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX ledger_promise_invoice ON ledger_promise (invoice_id, created_at);

CREATE TABLE ledger_dispute (
    id                TEXT   PRIMARY KEY,
    invoice_id        TEXT   NOT NULL REFERENCES ledger_invoice (id),
    reason            TEXT   NOT NULL CHECK (reason IN ('wrong_amount', 'not_received', 'damaged_or_defective',
                                             'duplicate', 'already_paid', 'cancelled', 'pricing', 'other')),
    note              TEXT   NOT NULL DEFAULT '',
    opened_by         TEXT   NOT NULL CHECK (opened_by <> ''),
    opened_by_actor   TEXT   NOT NULL DEFAULT '',
    opened_at         INTEGER NOT NULL,
    outcome           TEXT   NOT NULL DEFAULT '' CHECK (outcome IN ('', 'upheld', 'rejected')),
    resolution_note   TEXT   NOT NULL DEFAULT '',
    resolved_by       TEXT   NOT NULL DEFAULT '',
    resolved_by_actor TEXT   NOT NULL DEFAULT '',
    resolved_at       INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE INDEX ledger_dispute_invoice ON ledger_dispute (invoice_id, opened_at);
-- At most one open dispute per invoice.
CREATE UNIQUE INDEX ledger_dispute_open ON ledger_dispute (invoice_id) WHERE outcome = '';

-- The serving role's grants on PostgreSQL, as triggers.
-- +goose StatementBegin
CREATE TRIGGER ledger_invoice_no_delete BEFORE DELETE ON ledger_invoice
BEGIN SELECT RAISE(ABORT, 'the ledger keeps its records: DELETE on ledger_invoice refused'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_payment_no_delete BEFORE DELETE ON ledger_payment
BEGIN SELECT RAISE(ABORT, 'the ledger keeps its records: DELETE on ledger_payment refused'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_allocation_no_update BEFORE UPDATE ON ledger_allocation
BEGIN SELECT RAISE(ABORT, 'the ledger keeps its records: UPDATE on ledger_allocation refused'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_allocation_no_delete BEFORE DELETE ON ledger_allocation
BEGIN SELECT RAISE(ABORT, 'the ledger keeps its records: DELETE on ledger_allocation refused'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_promise_no_update BEFORE UPDATE ON ledger_promise
BEGIN SELECT RAISE(ABORT, 'the ledger keeps its records: UPDATE on ledger_promise refused'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_promise_no_delete BEFORE DELETE ON ledger_promise
BEGIN SELECT RAISE(ABORT, 'the ledger keeps its records: DELETE on ledger_promise refused'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_dispute_no_delete BEFORE DELETE ON ledger_dispute
BEGIN SELECT RAISE(ABORT, 'the ledger keeps its records: DELETE on ledger_dispute refused'); END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE ledger_dispute;
DROP TABLE ledger_promise;
DROP TABLE ledger_allocation;
DROP TABLE ledger_payment;
DROP TABLE ledger_invoice;
