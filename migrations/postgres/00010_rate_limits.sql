-- Rate limits (internal/limits): the GCRA state of every key, shared by all replicas.
--
-- tat is the key's theoretical arrival time, in microseconds since the epoch on the database's
-- clock. A row whose tat has passed means the same as no row (a full burst), so the limiter
-- deletes such rows from time to time. Keys are hashes: the table holds no identities or
-- addresses. Every decision updates tat in place; there is deliberately no index on it, so
-- the updates stay HOT, and the fillfactor leaves them room on the page.

-- +goose Up
CREATE TABLE rate_limit (
    key text   PRIMARY KEY,
    tat bigint NOT NULL
) WITH (fillfactor = 70);

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT, INSERT, UPDATE, DELETE ON rate_limit TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE rate_limit;
