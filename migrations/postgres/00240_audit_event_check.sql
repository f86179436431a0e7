-- audit_event's five CHECK constraints become one BEFORE INSERT trigger with the same rules
-- (issue 31): PostgreSQL reads a table's CHECK constraints from their stored text and
-- prepares them again for every INSERT statement, which made up about 40 % of the server's
-- work for an audit event (docs/benchmarks.md, "Medium-tier call in one transaction"); a
-- PL/pgSQL trigger function is compiled once per connection. The rules are those of
-- 00001_audit_log.sql, 00020_audit_mac.sql (new rows only, as its NOT VALID constraint was)
-- and 00162_audit_key_id.sql; a row that breaks one is refused with SQLSTATE 23514
-- (check_violation) naming the constraint it replaces, as before. Dropping the trigger takes
-- the table's owner, as dropping a constraint did: the serving role can do neither.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION audit_event_check() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.server_time IS NULL OR NEW.nonce IS NULL OR NEW.mac IS NULL
        OR length(NEW.nonce) <> 16 OR length(NEW.mac) <> 32 THEN
        RAISE EXCEPTION 'audit event without a MAC refused'
            USING ERRCODE = 'check_violation', TABLE = 'audit_event', CONSTRAINT = 'audit_event_authenticated';
    END IF;
    IF NEW.event = '' THEN
        RAISE EXCEPTION 'audit event without a name refused'
            USING ERRCODE = 'check_violation', TABLE = 'audit_event', CONSTRAINT = 'audit_event_event_check';
    END IF;
    IF NEW.outcome = '' THEN
        RAISE EXCEPTION 'audit event without an outcome refused'
            USING ERRCODE = 'check_violation', TABLE = 'audit_event', CONSTRAINT = 'audit_event_outcome_check';
    END IF;
    IF jsonb_typeof(NEW.details) <> 'object' THEN
        RAISE EXCEPTION 'audit event whose details are not an object refused'
            USING ERRCODE = 'check_violation', TABLE = 'audit_event', CONSTRAINT = 'audit_event_details_check';
    END IF;
    -- NULL passes, as it passed the CHECK: a replica of before key ids writes none.
    IF NEW.key_id !~ '^[0-9a-f]{16}$' THEN
        RAISE EXCEPTION 'audit event with a malformed key id refused'
            USING ERRCODE = 'check_violation', TABLE = 'audit_event', CONSTRAINT = 'audit_event_key_id_check';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER audit_event_check BEFORE INSERT ON audit_event
    FOR EACH ROW EXECUTE FUNCTION audit_event_check();

ALTER TABLE audit_event
    DROP CONSTRAINT audit_event_authenticated,
    DROP CONSTRAINT audit_event_event_check,
    DROP CONSTRAINT audit_event_outcome_check,
    DROP CONSTRAINT audit_event_details_check,
    DROP CONSTRAINT audit_event_key_id_check;

-- +goose Down
ALTER TABLE audit_event
    ADD CONSTRAINT audit_event_event_check CHECK (event <> ''),
    ADD CONSTRAINT audit_event_outcome_check CHECK (outcome <> ''),
    ADD CONSTRAINT audit_event_details_check CHECK (jsonb_typeof(details) = 'object'),
    ADD CONSTRAINT audit_event_key_id_check CHECK (key_id ~ '^[0-9a-f]{16}$');
ALTER TABLE audit_event ADD CONSTRAINT audit_event_authenticated CHECK (
    server_time IS NOT NULL AND nonce IS NOT NULL AND mac IS NOT NULL
    AND length(nonce) = 16 AND length(mac) = 32
) NOT VALID;
DROP TRIGGER audit_event_check ON audit_event;
DROP FUNCTION audit_event_check();
