-- The tamper-evident audit log (internal/auditlog); see the PostgreSQL migration of the same
-- number for the design. SQLite has one writer at a time, so the inserting transaction's
-- order is the row id order and no transaction id column is needed.

-- +goose Up
CREATE TABLE audit_event (
    id            INTEGER PRIMARY KEY,
    occurred_at   INTEGER NOT NULL, -- Unix time in microseconds, UTC
    event         TEXT    NOT NULL CHECK (event <> ''),
    tool          TEXT    NOT NULL DEFAULT '',
    risk          TEXT    NOT NULL DEFAULT '',
    subject       TEXT    NOT NULL DEFAULT '',
    actor         TEXT    NOT NULL DEFAULT '',
    client_id     TEXT    NOT NULL DEFAULT '',
    acr           TEXT    NOT NULL DEFAULT '',
    request_id    TEXT    NOT NULL DEFAULT '',
    outcome       TEXT    NOT NULL CHECK (outcome <> ''),
    failure_code  TEXT    NOT NULL DEFAULT '',
    args_digest   TEXT    NOT NULL DEFAULT '',
    result_digest TEXT    NOT NULL DEFAULT '',
    duration_us   INTEGER NOT NULL DEFAULT 0,
    details       TEXT    NOT NULL DEFAULT '{}' CHECK (json_type(details) = 'object')
) STRICT;

CREATE INDEX audit_event_occurred_at ON audit_event (occurred_at);

CREATE TABLE audit_seal (
    seq       INTEGER PRIMARY KEY CHECK (seq > 0),
    event_id  INTEGER NOT NULL UNIQUE REFERENCES audit_event (id),
    alg       INTEGER NOT NULL DEFAULT 1,
    prev_hash BLOB    NOT NULL CHECK (length(prev_hash) = 32),
    hash      BLOB    NOT NULL CHECK (length(hash) = 32)
) STRICT;

-- +goose StatementBegin
CREATE TRIGGER audit_event_no_update BEFORE UPDATE ON audit_event
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: UPDATE on audit_event refused'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER audit_event_no_delete BEFORE DELETE ON audit_event
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: DELETE on audit_event refused'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER audit_seal_no_update BEFORE UPDATE ON audit_seal
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: UPDATE on audit_seal refused'); END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER audit_seal_no_delete BEFORE DELETE ON audit_seal
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: DELETE on audit_seal refused'); END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE audit_seal;
DROP TABLE audit_event;
