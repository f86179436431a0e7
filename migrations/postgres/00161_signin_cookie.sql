-- Sign-ins in progress live in the browser (internal/signin: a sealed, short-lived cookie), no
-- longer in the table web_signin: anyone may start a sign-in, and a table of them, however
-- bounded, could be filled by one party until nobody could sign in (issue 25). The table goes;
-- a sign-in in progress during the upgrade is started again.

-- +goose Up
DROP TABLE IF EXISTS web_signin;

-- +goose Down
CREATE TABLE web_signin (
    id_hash     bytea  PRIMARY KEY CHECK (length(id_hash) = 32),
    state       text   NOT NULL CHECK (state <> ''),
    nonce       text   NOT NULL CHECK (nonce <> ''),
    verifier    text   NOT NULL CHECK (verifier <> ''),
    return_to   text   NOT NULL CHECK (return_to LIKE '/%'),
    acr_values  text   NOT NULL DEFAULT '',
    max_age     bigint CHECK (max_age > 0),
    created_at  bigint NOT NULL,
    expires_at  bigint NOT NULL CHECK (expires_at > created_at),
    client      bytea  NOT NULL CHECK (length(client) = 32)
);

CREATE INDEX web_signin_expires_at ON web_signin (expires_at);
CREATE INDEX web_signin_client ON web_signin (client);

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT, INSERT, DELETE ON web_signin TO cobranca_app;
    END IF;
END
$$;
-- +goose StatementEnd
