-- The development authorization server (internal/authserver); see the PostgreSQL migration of
-- the same number for the design. Times are microseconds since the epoch on the process's clock.

-- +goose Up
CREATE TABLE oauth_client (
    id            TEXT    PRIMARY KEY CHECK (length(id) = 29 AND id GLOB 'oc_*' AND NOT substr(id, 4) GLOB '*[^a-z2-7]*'),
    client_name   TEXT    NOT NULL,
    redirect_uris TEXT    NOT NULL,
    created_at    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX oauth_client_created_at ON oauth_client (created_at, id);

CREATE TABLE oauth_code (
    code_hash      BLOB    PRIMARY KEY CHECK (length(code_hash) = 32),
    client_id      TEXT    NOT NULL,
    redirect_uri   TEXT    NOT NULL,
    code_challenge TEXT    NOT NULL CHECK (length(code_challenge) = 43),
    subject        TEXT    NOT NULL CHECK (subject <> ''),
    kind           TEXT    NOT NULL CHECK (kind IN ('person', 'agent')),
    scope          TEXT    NOT NULL,
    acr            TEXT    NOT NULL,
    nonce          TEXT    NOT NULL,
    auth_time      INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX oauth_code_expires_at ON oauth_code (expires_at);

-- +goose Down
DROP TABLE oauth_code;
DROP TABLE oauth_client;
