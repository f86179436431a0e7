-- The development authorization server's spent sign-in forms (internal/authserver; development
-- mode only). A sign-in form carries its request sealed, with a random form id; the first
-- decision posted with it (sign in, or deny) records the SHA-256 of that id here, in the
-- transaction that makes the code, and a second post of the same form is refused. The rows are
-- bounded by decisions, which only this machine can post (the page answers loopback requests
-- only), and each lives as long as the form could be posted (10 minutes): expired ones are
-- deleted as new ones are made.

-- +goose Up
CREATE TABLE oauth_form_spent (
    form_hash  bytea  PRIMARY KEY CHECK (length(form_hash) = 32),
    expires_at bigint NOT NULL
);
CREATE INDEX oauth_form_spent_expires_at ON oauth_form_spent (expires_at);

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT, INSERT, DELETE ON oauth_form_spent TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE oauth_form_spent;
