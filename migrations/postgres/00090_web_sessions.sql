-- Sign-in for people on cobranca's own pages (internal/signin): the approval page today.
--
-- web_signin: a sign-in in progress (a pre-session), from GET /signin to its callback, bound
-- to the browser that started it by a short-lived cookie whose SHA-256 is id_hash. It keeps
-- what the callback checks — the OAuth state, the OIDC nonce, the PKCE verifier — where to go
-- back to (a local path), and the step-up asked of the issuer (acr_values space separated, ''
-- for none; max_age in seconds, NULL for none). The callback deletes it as it reads it, so a
-- replayed callback finds nothing; it lives 10 minutes. Anyone may start one, so they are
-- bounded: client is the SHA-256 of the address that started it (an IPv4 address or an IPv6
-- /64, as the per-origin rate limit counts clients), and one client holds at most 20 live
-- pre-sessions, the table at most 20,000 (internal/signin).
--
-- web_session: a signed-in person (or agent: the page refuses it at the decision), behind the
-- session cookie whose SHA-256 is id_hash (the cookie value itself is never stored). It holds
-- the principal the verified ID token named (subject, client, actor, kind, acr, auth_time in
-- microseconds or 0), the session's CSRF token for its forms, and its absolute expiry; it
-- also ends after a time without use (last_seen_at). Sign-out deletes it; a person's eleventh
-- session ends their oldest (internal/signin).
--
-- Expired rows of both are deleted by the next sign-in. Times are microseconds since the
-- epoch on the server's clock.

-- +goose Up
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

CREATE TABLE web_session (
    id_hash      bytea  PRIMARY KEY CHECK (length(id_hash) = 32),
    subject      text   NOT NULL CHECK (subject <> ''),
    client_id    text   NOT NULL,
    actor        text   NOT NULL DEFAULT '',
    kind         text   NOT NULL CHECK (kind IN ('human', 'agent')),
    acr          text   NOT NULL DEFAULT '',
    auth_time    bigint NOT NULL DEFAULT 0,
    csrf         text   NOT NULL CHECK (csrf <> ''),
    created_at   bigint NOT NULL,
    last_seen_at bigint NOT NULL,
    expires_at   bigint NOT NULL CHECK (expires_at > created_at)
);

CREATE INDEX web_session_expires_at ON web_session (expires_at);
CREATE INDEX web_session_subject ON web_session (subject, created_at);

-- The serving role starts, finishes and ends sign-ins and sessions; of a session it only
-- ever changes when it was last used.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT, INSERT, DELETE ON web_signin, web_session TO cobranca_app;
        GRANT UPDATE (last_seen_at) ON web_session TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE web_session;
DROP TABLE web_signin;
