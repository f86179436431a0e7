-- Reminders that say how to pay (internal/reminders); see the PostgreSQL migration of the same
-- number for the design. SQLite adds a column only with a constant default; its CHECK may name
-- the columns added before it.

-- +goose Up
ALTER TABLE reminder_draft ADD COLUMN html TEXT NOT NULL DEFAULT '';
ALTER TABLE reminder_draft ADD COLUMN currency TEXT NOT NULL DEFAULT 'BRL'
    CHECK (length(currency) = 3 AND NOT currency GLOB '*[^A-Z]*');
ALTER TABLE reminder_draft ADD COLUMN pix_code TEXT NOT NULL DEFAULT '';
ALTER TABLE reminder_draft ADD COLUMN pix_txid TEXT NOT NULL DEFAULT ''
    CHECK (length(pix_txid) <= 25 AND NOT pix_txid GLOB '*[^A-Za-z0-9]*'
        AND (pix_code = '') = (pix_txid = '') AND (pix_code = '' OR currency = 'BRL'));
ALTER TABLE reminder_draft ADD COLUMN pix_amount_cents INTEGER NOT NULL DEFAULT 0 CHECK (pix_amount_cents >= 0);

CREATE UNIQUE INDEX reminder_draft_pix_txid ON reminder_draft (pix_txid) WHERE pix_txid <> '';

-- +goose Down
DROP INDEX reminder_draft_pix_txid;
ALTER TABLE reminder_draft DROP COLUMN pix_amount_cents;
ALTER TABLE reminder_draft DROP COLUMN pix_txid;
ALTER TABLE reminder_draft DROP COLUMN pix_code;
ALTER TABLE reminder_draft DROP COLUMN currency;
ALTER TABLE reminder_draft DROP COLUMN html;
