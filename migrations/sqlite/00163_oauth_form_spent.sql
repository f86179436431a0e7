-- The development authorization server's spent sign-in forms; see the PostgreSQL migration of the
-- same number for the design.

-- +goose Up
CREATE TABLE oauth_form_spent (
    form_hash  BLOB    PRIMARY KEY CHECK (length(form_hash) = 32),
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX oauth_form_spent_expires_at ON oauth_form_spent (expires_at);

-- +goose Down
DROP TABLE oauth_form_spent;
