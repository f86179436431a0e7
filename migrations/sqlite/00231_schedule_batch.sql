-- The daily batches of collection schedules: as migrations/postgres/00231, which says what each
-- column means. One row per schedule and day: the key makes the batch once.

-- +goose Up
CREATE TABLE schedule_batch (
    schedule_id text    NOT NULL REFERENCES schedule (id),
    batch_date  text    NOT NULL CHECK (batch_date GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'),
    outcome     text    NOT NULL CHECK (outcome IN ('opened', 'lapsed', 'empty', 'closed')),
    approval_id text    NOT NULL DEFAULT '',
    bulk_id     text    NOT NULL DEFAULT '',
    drafts      integer NOT NULL CHECK (drafts >= 0),
    recipients  integer NOT NULL CHECK (recipients >= 0),
    plan_hash   text    NOT NULL DEFAULT '',
    skipped     text    NOT NULL,
    created_at  integer NOT NULL,
    PRIMARY KEY (schedule_id, batch_date),
    CHECK ((outcome IN ('opened', 'lapsed')) = (approval_id <> ''))
) WITHOUT ROWID;

-- +goose Down
DROP TABLE schedule_batch;
