-- The development authorization server (internal/authserver; development mode only: production
-- never writes these tables).
--
-- oauth_client: a client registered through RFC 7591 dynamic registration. An MCP client caches
-- its registration (the Inspector does), so the rows outlive a restart. Public clients only (PKCE,
-- no secret); redirect_uris is the JSON array of exact redirect URIs. The server keeps the newest
-- authserver.MaxClients rows and deletes older ones at each registration.
--
-- oauth_code: an authorization code, stored as the SHA-256 of the code (the code itself is a
-- credential and never stored), bound to its client, redirect URI and PKCE S256 challenge, with
-- what the developer chose on the sign-in page. It is spent by deleting it (DELETE … RETURNING),
-- so any replica redeems it once; expired ones are deleted as new ones are made.
--
-- Times are microseconds since the epoch on the server's clock, like the approvals.

-- +goose Up
CREATE TABLE oauth_client (
    id            text   PRIMARY KEY CHECK (id ~ '^oc_[a-z2-7]{26}$'),
    client_name   text   NOT NULL,
    redirect_uris text   NOT NULL,
    created_at    bigint NOT NULL
);
CREATE INDEX oauth_client_created_at ON oauth_client (created_at, id);

CREATE TABLE oauth_code (
    code_hash      bytea  PRIMARY KEY CHECK (length(code_hash) = 32),
    client_id      text   NOT NULL,
    redirect_uri   text   NOT NULL,
    code_challenge text   NOT NULL CHECK (length(code_challenge) = 43),
    subject        text   NOT NULL CHECK (subject <> ''),
    kind           text   NOT NULL CHECK (kind IN ('person', 'agent')),
    scope          text   NOT NULL,
    acr            text   NOT NULL,
    nonce          text   NOT NULL,
    auth_time      bigint NOT NULL,
    expires_at     bigint NOT NULL
);
CREATE INDEX oauth_code_expires_at ON oauth_code (expires_at);

-- The serving role registers clients (and deletes the oldest past the bound), makes codes and
-- spends them.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT, INSERT, DELETE ON oauth_client, oauth_code TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE oauth_code;
DROP TABLE oauth_client;
