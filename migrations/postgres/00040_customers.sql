-- Customers and their contact status (internal/customers).
--
-- id is the operator's own customer id (as in analyze_portfolio's customerId). name and email
-- are what the operator or an agent wrote: data, never interpreted. contact_status is
-- 'contactable', 'paused' (until paused_until, a YYYY-MM-DD date: no contact before it) or
-- 'do_not_contact'; status_reason, status_set_by (the subject), status_set_actor (the agent
-- acting on the subject's behalf, '' for a person) and status_set_at say who set it, why and
-- when ('' and 0 while never set). Absent values are '' and 0 rather than NULL, so that both
-- dialects scan into plain strings and integers. email_key is email as addresses are compared
-- (customers.EmailKey: lower case, computed in Go so that both dialects agree).
--
-- Times are microseconds since the epoch on the server's clock, like 00030. No DELETE grant:
-- a customer is never removed by the serving role; nor may it rewrite a customer's id or
-- created_at (UPDATE is granted on the columns serving writes only).

-- +goose Up
CREATE TABLE customer (
    id               text   PRIMARY KEY,
    name             text   NOT NULL,
    email            text   NOT NULL,
    email_key        text   NOT NULL,
    contact_status   text   NOT NULL DEFAULT 'contactable'
                     CHECK (contact_status IN ('contactable', 'paused', 'do_not_contact')),
    paused_until     text   NOT NULL DEFAULT ''
                     CHECK (paused_until = '' OR paused_until ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
    status_reason    text   NOT NULL DEFAULT '',
    status_set_by    text   NOT NULL DEFAULT '',
    status_set_actor text   NOT NULL DEFAULT '',
    status_set_at    bigint NOT NULL DEFAULT 0,
    created_at       bigint NOT NULL,
    updated_at       bigint NOT NULL,
    CHECK ((contact_status = 'paused') = (paused_until <> ''))
);

-- Who else has an address: a reminder is refused when any customer with its address is not
-- contactable (customers.LockForContact).
CREATE INDEX customer_email_key ON customer (email_key);

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT, INSERT ON customer TO cobranca_app;
        -- Only what serving writes: a customer's name and e-mail (upsert, email_key with it) and
        -- its status (set status). Never its id or created_at.
        GRANT UPDATE (name, email, email_key, contact_status, paused_until, status_reason,
            status_set_by, status_set_actor, status_set_at, updated_at) ON customer TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE customer;
