-- Sign-in for people on cobranca's own pages (internal/signin); see the PostgreSQL migration
-- of the same number for the design. Times are microseconds since the epoch on the process's
-- clock.

-- +goose Up
CREATE TABLE web_signin (
    id_hash     BLOB    PRIMARY KEY CHECK (length(id_hash) = 32),
    state       TEXT    NOT NULL CHECK (state <> ''),
    nonce       TEXT    NOT NULL CHECK (nonce <> ''),
    verifier    TEXT    NOT NULL CHECK (verifier <> ''),
    return_to   TEXT    NOT NULL CHECK (substr(return_to, 1, 1) = '/'),
    acr_values  TEXT    NOT NULL DEFAULT '',
    max_age     INTEGER CHECK (max_age > 0),
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL CHECK (expires_at > created_at),
    client      BLOB    NOT NULL CHECK (length(client) = 32)
) WITHOUT ROWID;

CREATE INDEX web_signin_expires_at ON web_signin (expires_at);
CREATE INDEX web_signin_client ON web_signin (client);

CREATE TABLE web_session (
    id_hash      BLOB    PRIMARY KEY CHECK (length(id_hash) = 32),
    subject      TEXT    NOT NULL CHECK (subject <> ''),
    client_id    TEXT    NOT NULL,
    actor        TEXT    NOT NULL DEFAULT '',
    kind         TEXT    NOT NULL CHECK (kind IN ('human', 'agent')),
    acr          TEXT    NOT NULL DEFAULT '',
    auth_time    INTEGER NOT NULL DEFAULT 0,
    csrf         TEXT    NOT NULL CHECK (csrf <> ''),
    created_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL CHECK (expires_at > created_at)
) WITHOUT ROWID;

CREATE INDEX web_session_expires_at ON web_session (expires_at);
CREATE INDEX web_session_subject ON web_session (subject, created_at);

-- +goose Down
DROP TABLE web_session;
DROP TABLE web_signin;
