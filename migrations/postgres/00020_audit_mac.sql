-- Audit events carry a MAC (internal/auditlog): the serving role may INSERT into audit_event,
-- so the hash chain alone cannot tell an event the server wrote from a row inserted with
-- database credentials. Each event now carries, written by the server with it:
--
--   server_time  the server's clock when it made the event, in microseconds since the epoch:
--                the call's time, also for an event kept in the spool and written later
--                (occurred_at stays the database clock at the INSERT);
--   nonce        16 random bytes, unique: a copy of an authentic row cannot be inserted again;
--   mac          HMAC-SHA256, under a key derived from COBRANCA_AUDIT_KEY, over the nonce, the
--                server time and every content column (auditlog.eventMAC).
--
-- Events written before this migration have none of the three: `cobranca audit verify`
-- reports them as unauthenticated without failing. From now on the database refuses an event
-- without them (the constraint is NOT VALID: it holds for new rows only), so a MAC-less row
-- after an authenticated one can only come from someone who dropped the constraint, and
-- verify fails there.

-- +goose Up
ALTER TABLE audit_event
    ADD COLUMN server_time bigint,
    ADD COLUMN nonce       bytea,
    ADD COLUMN mac         bytea;

ALTER TABLE audit_event ADD CONSTRAINT audit_event_authenticated CHECK (
    server_time IS NOT NULL AND nonce IS NOT NULL AND mac IS NOT NULL
    AND length(nonce) = 16 AND length(mac) = 32
) NOT VALID;

CREATE UNIQUE INDEX audit_event_nonce ON audit_event (nonce);

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT INSERT (server_time, nonce, mac) ON audit_event TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP INDEX audit_event_nonce;
ALTER TABLE audit_event DROP CONSTRAINT audit_event_authenticated;
ALTER TABLE audit_event DROP COLUMN mac, DROP COLUMN nonce, DROP COLUMN server_time;
