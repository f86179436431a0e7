-- Reminders that say how to pay (issue 28, internal/reminders): a draft keeps its HTML part
-- beside its text (body), the currency of its amounts, and the PIX code it carries.
--
-- html is the HTML part as rendered when the draft was written ('' for a draft written before,
-- which is sent as text only). currency is the ISO 4217 code of the draft's amounts (the
-- drafts written before were in reais). pix_code is the BR Code's copia-e-cola string, pix_txid
-- the txid it holds (internal/reminders.TxIDFor the draft's id: 25 letters and digits that name
-- the draft), pix_amount_cents the amount it asks for; '' / '' / 0 for a draft without one. A
-- PIX code pays reais only. Two drafts never share a txid: the payment that carries it is
-- matched to the draft's invoices (internal/ledger's references).
--
-- The serving role writes these with the draft (its INSERT on the table) and reads them; it
-- may not change them (no UPDATE on these columns): what a person approved is what is sent.

-- +goose Up
ALTER TABLE reminder_draft
    ADD COLUMN html             text   NOT NULL DEFAULT '',
    ADD COLUMN currency         text   NOT NULL DEFAULT 'BRL' CHECK (currency ~ '^[A-Z]{3}$'),
    ADD COLUMN pix_code         text   NOT NULL DEFAULT '',
    ADD COLUMN pix_txid         text   NOT NULL DEFAULT '' CHECK (pix_txid ~ '^[A-Za-z0-9]{0,25}$'),
    ADD COLUMN pix_amount_cents bigint NOT NULL DEFAULT 0 CHECK (pix_amount_cents >= 0),
    ADD CONSTRAINT reminder_draft_pix CHECK ((pix_code = '') = (pix_txid = '') AND (pix_code = '' OR currency = 'BRL'));

CREATE UNIQUE INDEX reminder_draft_pix_txid ON reminder_draft (pix_txid) WHERE pix_txid <> '';

-- +goose Down
DROP INDEX reminder_draft_pix_txid;
ALTER TABLE reminder_draft DROP CONSTRAINT reminder_draft_pix, DROP COLUMN pix_amount_cents, DROP COLUMN pix_txid,
    DROP COLUMN pix_code, DROP COLUMN currency, DROP COLUMN html;
