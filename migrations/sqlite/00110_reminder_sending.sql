-- Sending reminder drafts; see the PostgreSQL migration of the same number for the design.
-- SQLite cannot change a CHECK constraint: the table is rebuilt with the new states and
-- columns, its rows copied, and its indexes made again.

-- +goose Up
CREATE TABLE reminder_draft_new (
    id               TEXT    PRIMARY KEY CHECK (length(id) = 28 AND id GLOB 'd_*' AND NOT substr(id, 3) GLOB '*[^a-z2-7]*'),
    customer_id      TEXT    NOT NULL REFERENCES customer (id),
    recipient_name   TEXT    NOT NULL,
    recipient_email  TEXT    NOT NULL,
    tone             TEXT    NOT NULL CHECK (tone IN ('friendly', 'firm')),
    language         TEXT    NOT NULL CHECK (language IN ('pt-BR', 'en')),
    invoices         TEXT    NOT NULL,
    invoice_set_hash BLOB    NOT NULL CHECK (length(invoice_set_hash) = 32),
    invoice_count    INTEGER NOT NULL CHECK (invoice_count > 0),
    total_cents      INTEGER NOT NULL CHECK (total_cents > 0),
    subject          TEXT    NOT NULL,
    body             TEXT    NOT NULL,
    state            TEXT    NOT NULL CHECK (state IN ('draft', 'discarded', 'queued', 'sent', 'undeliverable')),
    created_by       TEXT    NOT NULL,
    created_by_actor TEXT    NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    outbox_id        INTEGER,
    message_id       TEXT,
    queued_by        TEXT,
    queued_by_actor  TEXT,
    approval_id      TEXT,
    queued_at        INTEGER,
    delivered_at     INTEGER,
    failed_at        INTEGER,
    failure_reason   TEXT,
    CHECK ((state IN ('queued', 'sent', 'undeliverable')) =
            (outbox_id IS NOT NULL AND message_id IS NOT NULL AND queued_by IS NOT NULL AND queued_at IS NOT NULL)
        AND (state = 'sent') = (delivered_at IS NOT NULL)
        AND (state = 'undeliverable') = (failed_at IS NOT NULL AND failure_reason IS NOT NULL))
) WITHOUT ROWID;

INSERT INTO reminder_draft_new (id, customer_id, recipient_name, recipient_email, tone, language, invoices,
    invoice_set_hash, invoice_count, total_cents, subject, body, state, created_by, created_by_actor, created_at, updated_at)
SELECT id, customer_id, recipient_name, recipient_email, tone, language, invoices,
    invoice_set_hash, invoice_count, total_cents, subject, body, state, created_by, created_by_actor, created_at, updated_at
FROM reminder_draft;
DROP TABLE reminder_draft;
ALTER TABLE reminder_draft_new RENAME TO reminder_draft;

CREATE UNIQUE INDEX reminder_draft_open ON reminder_draft (customer_id, invoice_set_hash, tone)
    WHERE state = 'draft';
CREATE INDEX reminder_draft_created ON reminder_draft (created_at, id);
CREATE INDEX reminder_draft_customer_created ON reminder_draft (customer_id, created_at, id);

-- +goose Down
CREATE TABLE reminder_draft_old (
    id               TEXT    PRIMARY KEY CHECK (length(id) = 28 AND id GLOB 'd_*' AND NOT substr(id, 3) GLOB '*[^a-z2-7]*'),
    customer_id      TEXT    NOT NULL REFERENCES customer (id),
    recipient_name   TEXT    NOT NULL,
    recipient_email  TEXT    NOT NULL,
    tone             TEXT    NOT NULL CHECK (tone IN ('friendly', 'firm')),
    language         TEXT    NOT NULL CHECK (language IN ('pt-BR', 'en')),
    invoices         TEXT    NOT NULL,
    invoice_set_hash BLOB    NOT NULL CHECK (length(invoice_set_hash) = 32),
    invoice_count    INTEGER NOT NULL CHECK (invoice_count > 0),
    total_cents      INTEGER NOT NULL CHECK (total_cents > 0),
    subject          TEXT    NOT NULL,
    body             TEXT    NOT NULL,
    state            TEXT    NOT NULL CHECK (state IN ('draft', 'discarded')),
    created_by       TEXT    NOT NULL,
    created_by_actor TEXT    NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO reminder_draft_old SELECT id, customer_id, recipient_name, recipient_email, tone, language, invoices,
    invoice_set_hash, invoice_count, total_cents, subject, body, state, created_by, created_by_actor, created_at, updated_at
FROM reminder_draft WHERE state IN ('draft', 'discarded');
DROP TABLE reminder_draft;
ALTER TABLE reminder_draft_old RENAME TO reminder_draft;
CREATE UNIQUE INDEX reminder_draft_open ON reminder_draft (customer_id, invoice_set_hash, tone)
    WHERE state = 'draft';
CREATE INDEX reminder_draft_created ON reminder_draft (created_at, id);
CREATE INDEX reminder_draft_customer_created ON reminder_draft (customer_id, created_at, id);
