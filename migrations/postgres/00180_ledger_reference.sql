-- Payment references recorded on the ledger's invoices by what gave them to the customer (issue
-- 28, ledger.AddReference): the txid of the PIX code a reminder carries, which names its draft,
-- recorded on each of the draft's invoices the ledger knows, so that a payment quoting it
-- matches them by the reference rule like their own references. An invoice collects several
-- over time (a friendly reminder, then a firm one), and its own pix_txid, as the operator's
-- systems import it, is never overwritten: hence a table, not a column.
--
-- source says what recorded the reference ('reminder'), source_id which one (the draft's id).
-- A reference once given to a customer stays given: the serving role reads and inserts, never
-- changes or deletes.

-- +goose Up
CREATE TABLE ledger_reference (
    invoice_id text   NOT NULL REFERENCES ledger_invoice (id),
    reference  text   NOT NULL CHECK (reference <> ''),
    source     text   NOT NULL CHECK (source <> ''),
    source_id  text   NOT NULL CHECK (source_id <> ''),
    created_at bigint NOT NULL,
    PRIMARY KEY (invoice_id, reference)
);

-- Matching finds the invoices that carry the references payments quote.
CREATE INDEX ledger_reference_reference ON ledger_reference (reference, invoice_id);

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT, INSERT ON ledger_reference TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE ledger_reference;
