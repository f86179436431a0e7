-- Reminder drafts (internal/reminders).
--
-- A draft is a reminder written for one customer about a set of invoices, in one tone and
-- language, kept for a person (or, from issue 13, the sender) to act on. invoices is the set as
-- the draft was written for it, normalized (sorted by invoice id, JSON); invoice_set_hash is its
-- SHA-256 and the natural key: while a draft is open (state 'draft'), the same customer, invoice
-- set and tone name it, and the partial unique index makes that hold under concurrency — the
-- writer inserts with ON CONFLICT DO NOTHING and reads the winner. A discarded draft leaves the
-- index, so the same request afterwards writes a new one.
--
-- created_by is the subject who asked for the draft, created_by_actor the agent acting on its
-- behalf ('' for a person), as customer's status_set_by and status_set_actor (00040). Times are
-- microseconds since the epoch on the server's clock (as in 00030); id is "d_" and 128 random
-- bits in lower-case base32 (internal/ident, as file ids). customer_id is the operator's id of a stored customer (00040): a draft
-- is written after its customer, in the same transaction. recipient_name and recipient_email
-- are whom the draft greets and goes to, as it was written (the customer's name and address
-- then): a send goes where the reviewed draft says. When prepare_reminder changes a customer's
-- name or address, its open drafts to the old recipient are discarded in that transaction.

-- +goose Up
CREATE TABLE reminder_draft (
    id               text    PRIMARY KEY CHECK (id ~ '^d_[a-z2-7]{26}$'),
    customer_id      text    NOT NULL REFERENCES customer (id),
    recipient_name   text    NOT NULL,
    recipient_email  text    NOT NULL,
    tone             text    NOT NULL CHECK (tone IN ('friendly', 'firm')),
    language         text    NOT NULL CHECK (language IN ('pt-BR', 'en')),
    invoices         text    NOT NULL,
    invoice_set_hash bytea   NOT NULL CHECK (length(invoice_set_hash) = 32),
    invoice_count    integer NOT NULL CHECK (invoice_count > 0),
    total_cents      bigint  NOT NULL CHECK (total_cents > 0),
    subject          text    NOT NULL,
    body             text    NOT NULL,
    state            text    NOT NULL CHECK (state IN ('draft', 'discarded')),
    created_by       text    NOT NULL,
    created_by_actor text    NOT NULL DEFAULT '',
    created_at       bigint  NOT NULL,
    updated_at       bigint  NOT NULL
);

CREATE UNIQUE INDEX reminder_draft_open ON reminder_draft (customer_id, invoice_set_hash, tone)
    WHERE state = 'draft';
-- list_drafts pages newest first on (created_at, id), with or without a customer.
CREATE INDEX reminder_draft_created ON reminder_draft (created_at, id);
CREATE INDEX reminder_draft_customer_created ON reminder_draft (customer_id, created_at, id);

-- The serving role writes drafts and changes only their state; it never deletes one.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT, INSERT ON reminder_draft TO cobranca_app;
        GRANT UPDATE (state, updated_at) ON reminder_draft TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE reminder_draft;
