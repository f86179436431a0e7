-- Audit events name the key their MAC is under (internal/auditlog.KeyID: 16 hex digits derived
-- from the key), so that COBRANCA_AUDIT_KEY can rotate: `cobranca audit verify` checks each
-- event under its own key. Events written before this migration have none: they are under the
-- key in use then (the legacy key), which verify finds among the keys it is given.
--
-- No NOT NULL: a replica still running the previous version during a rolling upgrade writes
-- events without a key id, and they verify under the legacy key until that key is retired
-- (`cobranca audit rotate-key`); after that, verify reports every event under it.

-- +goose Up
ALTER TABLE audit_event ADD COLUMN key_id text CHECK (key_id ~ '^[0-9a-f]{16}$');

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT INSERT (key_id) ON audit_event TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
ALTER TABLE audit_event DROP COLUMN key_id;
