-- Collection schedules (issue 30, internal/schedules): réguas de cobrança.
--
-- schedule is one schedule: id ("sch_" and 128 random bits in lower-case base32, internal/ident),
-- its name, steps (JSON: [{offset, tone, language}], offsets in banking business days from the
-- due date, strictly increasing), audience (JSON: {all} or {customerIds, minOpenCents,
-- maxOpenCents, minBusinessDaysOverdue, maxBusinessDaysOverdue}), caps (messages per customer
-- per rolling 7 days, per batch), send window (IANA zone, HH:MM open and close, weekdays mon…sun
-- comma-separated), end date (YYYY-MM-DD), state, and who created, last paused and last resumed
-- it (subject, acting agent or '', µs since the epoch; '' and 0 while never). revision grows
-- with every change of state. schedules.Validate is the one judge of the columns' values.
--
-- schedule_step is how "had a step" is recorded: invoice_id took step (its index) of the
-- schedule in the batch prepared on prepared_on, as the reminder draft draft_id. The step
-- counts as had while that draft is not discarded; a later batch that gives the step again
-- rewrites the row. invoice_id is not a foreign key: it names a ledger invoice, as drafts do.
--
-- The serving role reads and inserts schedules and changes only their state and stamps; it
-- inserts steps and rewrites only a step's draft, date and time. Nothing is deleted.

-- +goose Up
CREATE TABLE schedule (
    id               text    PRIMARY KEY CHECK (id ~ '^sch_[a-z2-7]{26}$'),
    name             text    NOT NULL CHECK (name <> ''),
    steps            text    NOT NULL,
    audience         text    NOT NULL,
    cap_per_customer integer NOT NULL CHECK (cap_per_customer > 0),
    cap_per_batch    integer NOT NULL CHECK (cap_per_batch > 0),
    window_zone      text    NOT NULL,
    window_open      text    NOT NULL,
    window_close     text    NOT NULL,
    window_days      text    NOT NULL,
    end_date         text    NOT NULL CHECK (end_date ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
    state            text    NOT NULL CHECK (state IN ('active', 'paused')),
    created_by       text    NOT NULL CHECK (created_by <> ''),
    created_by_actor text    NOT NULL DEFAULT '',
    created_at       bigint  NOT NULL,
    paused_by        text    NOT NULL DEFAULT '',
    paused_by_actor  text    NOT NULL DEFAULT '',
    paused_at        bigint  NOT NULL DEFAULT 0,
    resumed_by       text    NOT NULL DEFAULT '',
    resumed_by_actor text    NOT NULL DEFAULT '',
    resumed_at       bigint  NOT NULL DEFAULT 0,
    updated_at       bigint  NOT NULL,
    revision         bigint  NOT NULL CHECK (revision > 0)
);

-- list_schedules pages newest first, all or of one state.
CREATE INDEX schedule_created ON schedule (created_at, id);
CREATE INDEX schedule_state_created ON schedule (state, created_at, id);

CREATE TABLE schedule_step (
    schedule_id text    NOT NULL REFERENCES schedule (id),
    invoice_id  text    NOT NULL CHECK (invoice_id <> ''),
    step        integer NOT NULL CHECK (step >= 0),
    draft_id    text    NOT NULL REFERENCES reminder_draft (id),
    prepared_on text    NOT NULL CHECK (prepared_on ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
    created_at  bigint  NOT NULL,
    PRIMARY KEY (schedule_id, invoice_id, step)
);

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT, INSERT ON schedule TO cobranca_app;
        GRANT UPDATE (state, paused_by, paused_by_actor, paused_at, resumed_by, resumed_by_actor, resumed_at,
            updated_at, revision) ON schedule TO cobranca_app;
        GRANT SELECT, INSERT ON schedule_step TO cobranca_app;
        GRANT UPDATE (draft_id, prepared_on, created_at) ON schedule_step TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE schedule_step;
DROP TABLE schedule;
