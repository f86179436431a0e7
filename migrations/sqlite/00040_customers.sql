-- Customers and their contact status (internal/customers); see the PostgreSQL migration of the
-- same number for the design. Times are microseconds since the epoch on the process's clock.

-- +goose Up
CREATE TABLE customer (
    id               TEXT    PRIMARY KEY,
    name             TEXT    NOT NULL,
    email            TEXT    NOT NULL,
    email_key        TEXT    NOT NULL,
    contact_status   TEXT    NOT NULL DEFAULT 'contactable'
                     CHECK (contact_status IN ('contactable', 'paused', 'do_not_contact')),
    paused_until     TEXT    NOT NULL DEFAULT ''
                     CHECK (paused_until = '' OR paused_until GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'),
    status_reason    TEXT    NOT NULL DEFAULT '',
    status_set_by    TEXT    NOT NULL DEFAULT '',
    status_set_actor TEXT    NOT NULL DEFAULT '',
    status_set_at    INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    CHECK ((contact_status = 'paused') = (paused_until <> ''))
) WITHOUT ROWID;

CREATE INDEX customer_email_key ON customer (email_key);

-- +goose Down
DROP TABLE customer;
