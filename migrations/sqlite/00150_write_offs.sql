-- Write-offs (internal/writeoffs); see the PostgreSQL migration of the same number for the
-- design. Times are microseconds since the epoch on the process's clock.

-- +goose Up
CREATE TABLE write_off (
    id             TEXT    PRIMARY KEY,
    invoice_id     TEXT    NOT NULL UNIQUE,
    customer_id    TEXT    NOT NULL REFERENCES customer (id),
    amount_cents   INTEGER NOT NULL CHECK (amount_cents > 0),
    reason         TEXT    NOT NULL CHECK (reason <> ''),
    written_off_by TEXT    NOT NULL CHECK (written_off_by <> ''),
    client_id      TEXT    NOT NULL,
    acr            TEXT    NOT NULL DEFAULT '',
    auth_time      INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX write_off_customer ON write_off (customer_id, created_at);

-- A write-off is permanent. PostgreSQL's serving role has no UPDATE or DELETE grant; SQLite has
-- no roles, so the table refuses both itself, as the audit log's does.
-- +goose StatementBegin
CREATE TRIGGER write_off_no_update BEFORE UPDATE ON write_off
BEGIN SELECT RAISE(ABORT, 'write-offs are permanent: UPDATE on write_off refused'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER write_off_no_delete BEFORE DELETE ON write_off
BEGIN SELECT RAISE(ABORT, 'write-offs are permanent: DELETE on write_off refused'); END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE write_off;
