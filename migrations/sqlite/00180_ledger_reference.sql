-- Payment references recorded on the ledger's invoices (ledger.AddReference); see the PostgreSQL
-- migration of the same number for the design. SQLite has no roles: the table refuses edits and
-- deletes itself.

-- +goose Up
CREATE TABLE ledger_reference (
    invoice_id TEXT    NOT NULL REFERENCES ledger_invoice (id),
    reference  TEXT    NOT NULL CHECK (reference <> ''),
    source     TEXT    NOT NULL CHECK (source <> ''),
    source_id  TEXT    NOT NULL CHECK (source_id <> ''),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (invoice_id, reference)
) WITHOUT ROWID;

-- Matching finds the invoices that carry the references payments quote.
CREATE INDEX ledger_reference_reference ON ledger_reference (reference, invoice_id);

-- The serving role's grants on PostgreSQL, as triggers.
-- +goose StatementBegin
CREATE TRIGGER ledger_reference_no_update BEFORE UPDATE ON ledger_reference
BEGIN SELECT RAISE(ABORT, 'the ledger keeps its records: UPDATE on ledger_reference refused'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER ledger_reference_no_delete BEFORE DELETE ON ledger_reference
BEGIN SELECT RAISE(ABORT, 'the ledger keeps its records: DELETE on ledger_reference refused'); END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE ledger_reference;
