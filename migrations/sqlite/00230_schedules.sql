-- Collection schedules (issue 30, internal/schedules): as migrations/postgres/00230, which says
-- what each column means. schedule_step records the steps invoices took: had while its draft is
-- not discarded.

-- +goose Up
CREATE TABLE schedule (
    id               TEXT    PRIMARY KEY CHECK (length(id) = 30 AND id GLOB 'sch_*' AND NOT substr(id, 5) GLOB '*[^a-z2-7]*'),
    name             TEXT    NOT NULL CHECK (name <> ''),
    steps            TEXT    NOT NULL,
    audience         TEXT    NOT NULL,
    cap_per_customer INTEGER NOT NULL CHECK (cap_per_customer > 0),
    cap_per_batch    INTEGER NOT NULL CHECK (cap_per_batch > 0),
    window_zone      TEXT    NOT NULL,
    window_open      TEXT    NOT NULL,
    window_close     TEXT    NOT NULL,
    window_days      TEXT    NOT NULL,
    end_date         TEXT    NOT NULL CHECK (end_date GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'),
    state            TEXT    NOT NULL CHECK (state IN ('active', 'paused')),
    created_by       TEXT    NOT NULL CHECK (created_by <> ''),
    created_by_actor TEXT    NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    paused_by        TEXT    NOT NULL DEFAULT '',
    paused_by_actor  TEXT    NOT NULL DEFAULT '',
    paused_at        INTEGER NOT NULL DEFAULT 0,
    resumed_by       TEXT    NOT NULL DEFAULT '',
    resumed_by_actor TEXT    NOT NULL DEFAULT '',
    resumed_at       INTEGER NOT NULL DEFAULT 0,
    updated_at       INTEGER NOT NULL,
    revision         INTEGER NOT NULL CHECK (revision > 0)
) WITHOUT ROWID;

CREATE INDEX schedule_created ON schedule (created_at, id);
CREATE INDEX schedule_state_created ON schedule (state, created_at, id);

CREATE TABLE schedule_step (
    schedule_id TEXT    NOT NULL REFERENCES schedule (id),
    invoice_id  TEXT    NOT NULL CHECK (invoice_id <> ''),
    step        INTEGER NOT NULL CHECK (step >= 0),
    draft_id    TEXT    NOT NULL REFERENCES reminder_draft (id),
    prepared_on TEXT    NOT NULL CHECK (prepared_on GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'),
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (schedule_id, invoice_id, step)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE schedule_step;
DROP TABLE schedule;
