-- The tamper-evident audit log (internal/auditlog).
--
-- audit_event is written by every tool call, inside the caller's transaction, with no lock
-- shared between writers. audit_seal is written by the sealer alone (under an advisory lock):
-- it gives each committed event its place in the hash chain (seq, prev_hash, hash). Both
-- tables are insert-only: the serving role has no UPDATE, DELETE or TRUNCATE privilege, and
-- triggers refuse those statements for everyone, the owner included.

-- +goose Up
CREATE TABLE audit_event (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The inserting transaction. The sealer seals a row only once every transaction with a
    -- smaller id has ended (pg_snapshot_xmin), so no event can ever commit "before" a sealed one.
    xid           xid8        NOT NULL DEFAULT pg_current_xact_id(),
    -- The database clock at the INSERT (clock_timestamp, not the transaction start: a long
    -- transaction must not backdate its events; one clock for every replica).
    occurred_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    event         text        NOT NULL CHECK (event <> ''),
    tool          text        NOT NULL DEFAULT '',
    risk          text        NOT NULL DEFAULT '',
    subject       text        NOT NULL DEFAULT '',
    actor         text        NOT NULL DEFAULT '',
    client_id     text        NOT NULL DEFAULT '',
    acr           text        NOT NULL DEFAULT '',
    request_id    text        NOT NULL DEFAULT '',
    outcome       text        NOT NULL CHECK (outcome <> ''),
    failure_code  text        NOT NULL DEFAULT '',
    args_digest   text        NOT NULL DEFAULT '',
    result_digest text        NOT NULL DEFAULT '',
    duration_us   bigint      NOT NULL DEFAULT 0,
    details       jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(details) = 'object')
);

CREATE INDEX audit_event_xid_id ON audit_event (xid, id);
CREATE INDEX audit_event_occurred_at ON audit_event (occurred_at);

CREATE TABLE audit_seal (
    seq       bigint   PRIMARY KEY CHECK (seq > 0),
    event_id  bigint   NOT NULL UNIQUE REFERENCES audit_event (id),
    alg       smallint NOT NULL DEFAULT 1,
    prev_hash bytea    NOT NULL CHECK (length(prev_hash) = 32),
    hash      bytea    NOT NULL CHECK (length(hash) = 32)
);

-- +goose StatementBegin
CREATE FUNCTION audit_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only: % on % refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END
$$;
-- +goose StatementEnd

CREATE TRIGGER audit_event_append_only BEFORE UPDATE OR DELETE ON audit_event
    FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER audit_event_no_truncate BEFORE TRUNCATE ON audit_event
    FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER audit_seal_append_only BEFORE UPDATE OR DELETE ON audit_seal
    FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER audit_seal_no_truncate BEFORE TRUNCATE ON audit_seal
    FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change();

-- The serving role. INSERT is granted on the content columns only, so the server cannot choose
-- an event's id, transaction id or time. No UPDATE, DELETE or TRUNCATE on either table.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT ON goose_db_version TO cobranca_app;
        GRANT SELECT ON audit_event, audit_seal TO cobranca_app;
        GRANT INSERT (event, tool, risk, subject, actor, client_id, acr, request_id, outcome,
                      failure_code, args_digest, result_digest, duration_us, details)
            ON audit_event TO cobranca_app;
        GRANT INSERT ON audit_seal TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE audit_seal;
DROP TABLE audit_event;
DROP FUNCTION audit_refuse_change();
