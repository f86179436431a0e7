-- Sign-ins in progress live in the browser, no longer in web_signin; see the PostgreSQL
-- migration of the same number.

-- +goose Up
DROP TABLE IF EXISTS web_signin;

-- +goose Down
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
