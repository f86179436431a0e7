-- Bulk sends of reminder drafts; see the PostgreSQL migration of the same number for the
-- design. Times are microseconds since the epoch on the process's clock. SQLite adds a column
-- only with a constant default: earliest_due_date is filled here and written by every insert.

-- +goose Up
CREATE TABLE bulk_send (
    id              TEXT    PRIMARY KEY CHECK (length(id) = 28 AND id GLOB 'b_*' AND NOT substr(id, 3) GLOB '*[^a-z2-7]*'),
    requested_by    TEXT    NOT NULL,
    requested_actor TEXT    NOT NULL DEFAULT '',
    approval_id     TEXT,
    plan_hash       TEXT    NOT NULL CHECK (length(plan_hash) = 64 AND NOT plan_hash GLOB '*[^0-9a-f]*'),
    total           INTEGER NOT NULL CHECK (total > 0),
    skipped         INTEGER NOT NULL CHECK (skipped >= 0),
    created_at      INTEGER NOT NULL
) WITHOUT ROWID;

ALTER TABLE reminder_draft ADD COLUMN bulk_id TEXT REFERENCES bulk_send (id);
ALTER TABLE reminder_draft ADD COLUMN earliest_due_date TEXT;
UPDATE reminder_draft SET earliest_due_date =
    (SELECT min(json_extract(value, '$.dueDate')) FROM json_each(reminder_draft.invoices));

CREATE INDEX reminder_draft_bulk ON reminder_draft (bulk_id, state) WHERE bulk_id IS NOT NULL;
CREATE INDEX reminder_draft_undeliverable ON reminder_draft (recipient_email) WHERE state = 'undeliverable';

-- +goose Down
DROP INDEX reminder_draft_undeliverable;
DROP INDEX reminder_draft_bulk;
ALTER TABLE reminder_draft DROP COLUMN earliest_due_date;
ALTER TABLE reminder_draft DROP COLUMN bulk_id;
DROP TABLE bulk_send;
