-- The daily batches of collection schedules (issue 30, internal/collections/batch.go).
--
-- schedule_batch is what a schedule's daily job did on one business day (batch_date,
-- YYYY-MM-DD in the schedule's window zone): outcome 'opened' (its drafts were prepared and one
-- bulk send of them waits for a person's approval: approval_id), 'lapsed' (that approval
-- expired or was rejected before the bulk send ran: its open drafts were discarded, which gives
-- their steps back), 'empty' (nothing to send: no approval asked) or 'closed' (the schedule
-- was paused or past its end date). The primary key is what makes the batch once per schedule
-- and day across replicas and retries: the job's transaction writes it with the drafts and the
-- approval, all or nothing. drafts counts the drafts prepared, recipients the messages the bulk
-- send's plan sends, plan_hash is its dry run's, skipped the skips by reason (JSON: the
-- schedule's plan's and the bulk send's). bulk_id names the bulk send once the approved call
-- ran ('' until then).
--
-- The serving role reads and inserts batches and sets only their outcome and bulk_id.

-- +goose Up
CREATE TABLE schedule_batch (
    schedule_id text    NOT NULL REFERENCES schedule (id),
    batch_date  text    NOT NULL CHECK (batch_date ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
    outcome     text    NOT NULL CHECK (outcome IN ('opened', 'lapsed', 'empty', 'closed')),
    approval_id text    NOT NULL DEFAULT '',
    bulk_id     text    NOT NULL DEFAULT '',
    drafts      integer NOT NULL CHECK (drafts >= 0),
    recipients  integer NOT NULL CHECK (recipients >= 0),
    plan_hash   text    NOT NULL DEFAULT '',
    skipped     text    NOT NULL,
    created_at  bigint  NOT NULL,
    PRIMARY KEY (schedule_id, batch_date),
    CHECK ((outcome IN ('opened', 'lapsed')) = (approval_id <> ''))
);

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT, INSERT ON schedule_batch TO cobranca_app;
        GRANT UPDATE (outcome, bulk_id) ON schedule_batch TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE schedule_batch;
