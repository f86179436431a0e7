-- Reminder drafts (internal/reminders); see the PostgreSQL migration of the same number for the
-- design. Times are microseconds since the epoch on the process's clock.

-- +goose Up
CREATE TABLE reminder_draft (
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

CREATE UNIQUE INDEX reminder_draft_open ON reminder_draft (customer_id, invoice_set_hash, tone)
    WHERE state = 'draft';
CREATE INDEX reminder_draft_created ON reminder_draft (created_at, id);
CREATE INDEX reminder_draft_customer_created ON reminder_draft (customer_id, created_at, id);

-- +goose Down
DROP TABLE reminder_draft;
