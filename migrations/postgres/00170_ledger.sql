-- The receivables ledger (issue 26, internal/ledger): the operator's invoices, the payments that
-- come back from banks or are recorded by people and agents, their allocations to invoices,
-- promises to pay and disputes.
--
-- An invoice's state and open amount are derived from its records (ledger.Derive), never typed
-- in. The derived cache on ledger_invoice (allocated_cents, written_off_cents, state, open_cents,
-- dispute_id, promise_id, promised_for) and ledger_payment.left_cents are written only by
-- internal/ledger, in the transaction that writes the records they derive from, so that the
-- send-time check reads one locked row per invoice and sees every payment committed before it.
--
-- Dates are text YYYY-MM-DD ('' when none); times are µs since the epoch. Amounts are bigint
-- minor units of the row's currency. Customer ids are not foreign keys: invoices may arrive
-- before their customer's contact record.
--
-- The serving role reads and inserts everything; it updates the invoices (upserts and the
-- cache), a payment's left_cents only, and a dispute's resolution only. Allocations and
-- promises are never changed (a correction is a new record), and nothing is ever deleted.

-- +goose Up
CREATE TABLE ledger_invoice (
    id                text    PRIMARY KEY,
    customer_id       text    NOT NULL CHECK (customer_id <> ''),
    customer_name     text    NOT NULL DEFAULT '',
    amount_cents      bigint  NOT NULL CHECK (amount_cents > 0),
    currency          text    NOT NULL CHECK (currency <> ''),
    issue_date        text    NOT NULL DEFAULT '',
    due_date          text    NOT NULL CHECK (due_date <> ''),
    void              boolean NOT NULL DEFAULT false,
    pix_txid          text    NOT NULL DEFAULT '',
    our_number        text    NOT NULL DEFAULT '',
    boleto_line       text    NOT NULL DEFAULT '',
    reference         text    NOT NULL DEFAULT '',
    allocated_cents   bigint  NOT NULL DEFAULT 0 CHECK (allocated_cents >= 0),
    written_off_cents bigint  NOT NULL DEFAULT 0 CHECK (written_off_cents >= 0),
    state             text    NOT NULL CHECK (state IN ('open', 'partially_paid', 'paid', 'void', 'written_off')),
    open_cents        bigint  NOT NULL CHECK (open_cents >= 0),
    dispute_id        text    NOT NULL DEFAULT '', -- the open dispute, '' when none
    promise_id        text    NOT NULL DEFAULT '', -- the latest promise, '' when none
    promised_for      text    NOT NULL DEFAULT '', -- its date
    created_at        bigint  NOT NULL,
    updated_at        bigint  NOT NULL
);

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
    id                text   PRIMARY KEY,
    source            text   NOT NULL CHECK (source <> ''),
    source_ref        text   NOT NULL CHECK (source_ref <> ''),
    amount_cents      bigint NOT NULL CHECK (amount_cents > 0),
    currency          text   NOT NULL CHECK (currency <> ''),
    paid_on           text   NOT NULL CHECK (paid_on <> ''),
    method            text   NOT NULL CHECK (method IN ('pix', 'boleto', 'transfer', 'card', 'other')),
    reference         text   NOT NULL DEFAULT '',
    customer_id       text   NOT NULL DEFAULT '',
    payer             text   NOT NULL DEFAULT '',
    left_cents        bigint NOT NULL CHECK (left_cents >= 0 AND left_cents <= amount_cents),
    recorded_by       text   NOT NULL CHECK (recorded_by <> ''),
    recorded_by_actor text   NOT NULL DEFAULT '',
    created_at        bigint NOT NULL,
    UNIQUE (source, source_ref)
);

-- The payments with something left (unmatched, or credit), oldest first.
CREATE INDEX ledger_payment_left ON ledger_payment (created_at, id) WHERE left_cents > 0;

CREATE TABLE ledger_allocation (
    payment_id         text   NOT NULL REFERENCES ledger_payment (id),
    invoice_id         text   NOT NULL REFERENCES ledger_invoice (id),
    amount_cents       bigint NOT NULL CHECK (amount_cents > 0),
    rule               text   NOT NULL CHECK (rule IN ('reference', 'amount', 'manual')),
    allocated_by       text   NOT NULL CHECK (allocated_by <> ''),
    allocated_by_actor text   NOT NULL DEFAULT '',
    created_at         bigint NOT NULL,
    PRIMARY KEY (payment_id, invoice_id)
);

CREATE INDEX ledger_allocation_invoice ON ledger_allocation (invoice_id);

CREATE TABLE ledger_promise (
    id                text   PRIMARY KEY,
    invoice_id        text   NOT NULL REFERENCES ledger_invoice (id),
    amount_cents      bigint NOT NULL CHECK (amount_cents > 0),
    promised_for      text   NOT NULL CHECK (promised_for <> ''),
    channel           text   NOT NULL CHECK (channel IN ('phone', 'email', 'chat', 'in_person', 'letter', 'other')),
    note              text   NOT NULL DEFAULT '',
    recorded_by       text   NOT NULL CHECK (recorded_by <> ''),
    recorded_by_actor text   NOT NULL DEFAULT '',
    created_at        bigint NOT NULL
);

CREATE INDEX ledger_promise_invoice ON ledger_promise (invoice_id, created_at);

CREATE TABLE ledger_dispute (
    id                text   PRIMARY KEY,
    invoice_id        text   NOT NULL REFERENCES ledger_invoice (id),
    reason            text   NOT NULL CHECK (reason IN ('wrong_amount', 'not_received', 'damaged_or_defective',
                                             'duplicate', 'already_paid', 'cancelled', 'pricing', 'other')),
    note              text   NOT NULL DEFAULT '',
    opened_by         text   NOT NULL CHECK (opened_by <> ''),
    opened_by_actor   text   NOT NULL DEFAULT '',
    opened_at         bigint NOT NULL,
    outcome           text   NOT NULL DEFAULT '' CHECK (outcome IN ('', 'upheld', 'rejected')),
    resolution_note   text   NOT NULL DEFAULT '',
    resolved_by       text   NOT NULL DEFAULT '',
    resolved_by_actor text   NOT NULL DEFAULT '',
    resolved_at       bigint NOT NULL DEFAULT 0
);

CREATE INDEX ledger_dispute_invoice ON ledger_dispute (invoice_id, opened_at);
-- At most one open dispute per invoice.
CREATE UNIQUE INDEX ledger_dispute_open ON ledger_dispute (invoice_id) WHERE outcome = '';

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT, INSERT, UPDATE ON ledger_invoice TO cobranca_app;
        GRANT SELECT, INSERT ON ledger_payment TO cobranca_app;
        GRANT UPDATE (left_cents) ON ledger_payment TO cobranca_app;
        GRANT SELECT, INSERT ON ledger_allocation TO cobranca_app;
        GRANT SELECT, INSERT ON ledger_promise TO cobranca_app;
        GRANT SELECT, INSERT ON ledger_dispute TO cobranca_app;
        GRANT UPDATE (outcome, resolution_note, resolved_by, resolved_by_actor, resolved_at) ON ledger_dispute TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE ledger_dispute;
DROP TABLE ledger_promise;
DROP TABLE ledger_allocation;
DROP TABLE ledger_payment;
DROP TABLE ledger_invoice;
