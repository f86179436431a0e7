-- The job queue (internal/outbox): River's tables, created by River's own migrator, which
-- `cobranca migrate` runs before these files (store/postgres: migrateRiver). River's
-- migrations are templated and versioned in a table of its own (river_migration), so we run
-- them rather than copy them here; upgrading River then needs no copy kept in step. Grants
-- stay ours: this file gives the serving role what River's client does — it inserts jobs in
-- the caller's transaction, claims, updates and deletes them (completion, retention), elects
-- a leader, registers its queues and passes notifications. A River upgrade that adds a table needs a grant here.

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT, INSERT, UPDATE, DELETE ON river_job, river_leader, river_queue,
            river_notification TO cobranca_app;
        GRANT SELECT ON river_migration TO cobranca_app;
        GRANT USAGE, SELECT ON SEQUENCE river_job_id_seq, river_notification_id_seq TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        REVOKE ALL ON river_job, river_leader, river_queue, river_notification, river_migration
            FROM cobranca_app;
        REVOKE ALL ON SEQUENCE river_job_id_seq, river_notification_id_seq FROM cobranca_app;
    END IF;
END
$$;
-- +goose StatementEnd
