-- Bulk sends of reminder drafts (collections.bulk_send_reminders, internal/reminders).
--
-- bulk_send is one approved bulk call: its id ("b_" and 128 random bits in lower-case base32,
-- internal/ident), who asked (requested_by, the token's subject; requested_actor, the agent
-- acting for it, '' for a person), the person's approval it ran under, the plan hash the dry
-- run showed and the call cited (hex SHA-256), how many drafts it queued (total) and how many
-- the selection held that it skipped (skipped: not open, do_not_contact, paused, suppressed
-- address). Times are microseconds since the epoch on the server's clock (as in 00050).
--
-- reminder_draft.bulk_id names the bulk send that queued the draft (NULL for a draft sent on
-- its own or never sent): collections.get_bulk_send counts the bulk's drafts by state
-- (queued, sent, undeliverable), so the counts follow delivery with no second record to keep.
-- reminder_draft.earliest_due_date is the earliest due date of the draft's invoices
-- (YYYY-MM-DD), written with the draft and filled here for the drafts already written: the
-- bulk's filter minDaysOverdue compares it with today.

-- +goose Up
CREATE TABLE bulk_send (
    id              text    PRIMARY KEY CHECK (id ~ '^b_[a-z2-7]{26}$'),
    requested_by    text    NOT NULL,
    requested_actor text    NOT NULL DEFAULT '',
    approval_id     text,
    plan_hash       text    NOT NULL CHECK (plan_hash ~ '^[0-9a-f]{64}$'),
    total           integer NOT NULL CHECK (total > 0),
    skipped         integer NOT NULL CHECK (skipped >= 0),
    created_at      bigint  NOT NULL
);

ALTER TABLE reminder_draft
    ADD COLUMN bulk_id           text REFERENCES bulk_send (id),
    ADD COLUMN earliest_due_date text;
UPDATE reminder_draft SET earliest_due_date =
    (SELECT min(e ->> 'dueDate') FROM jsonb_array_elements(invoices::jsonb) AS e);
ALTER TABLE reminder_draft ALTER COLUMN earliest_due_date SET NOT NULL;

-- get_bulk_send counts a bulk's drafts by state.
CREATE INDEX reminder_draft_bulk ON reminder_draft (bulk_id, state) WHERE bulk_id IS NOT NULL;
-- A bulk skips addresses that had a message refused for good.
CREATE INDEX reminder_draft_undeliverable ON reminder_draft (recipient_email) WHERE state = 'undeliverable';

-- The serving role records bulk sends and never changes or deletes one; it sets a draft's bulk.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT, INSERT ON bulk_send TO cobranca_app;
        GRANT UPDATE (bulk_id) ON reminder_draft TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP INDEX reminder_draft_undeliverable;
DROP INDEX reminder_draft_bulk;
ALTER TABLE reminder_draft DROP COLUMN earliest_due_date, DROP COLUMN bulk_id;
DROP TABLE bulk_send;
