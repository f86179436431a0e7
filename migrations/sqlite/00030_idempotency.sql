-- Idempotency keys and spent request-state nonces (internal/idempotency); see the PostgreSQL
-- migration of the same number for the design. SQLite needs no lock of its own: every write
-- transaction holds the database's write lock from its start (BEGIN IMMEDIATE), so two calls
-- with one key never run at once. Times are microseconds since the epoch on the process's
-- clock.

-- +goose Up
CREATE TABLE idempotency_key (
    principal   TEXT    NOT NULL,
    tool        TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    fingerprint BLOB    NOT NULL CHECK (length(fingerprint) = 32),
    response    BLOB    NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (principal, tool, key)
) WITHOUT ROWID;

CREATE INDEX idempotency_key_expires_at ON idempotency_key (expires_at);

CREATE TABLE request_state_nonce (
    nonce      BLOB    PRIMARY KEY CHECK (length(nonce) = 16),
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX request_state_nonce_expires_at ON request_state_nonce (expires_at);

-- +goose Down
DROP TABLE request_state_nonce;
DROP TABLE idempotency_key;
