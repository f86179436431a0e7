-- The operations console's lists (issue 29), each a keyset page read from an index whatever
-- the tables' size (docs/benchmarks.md, "Console reads"):
--
-- customer_status: the customers of one contact status (paused, do not contact), by id
-- (customers.List).
-- reminder_draft_sending: the messages of one delivery state (queued, sent, undeliverable),
-- the latest queued first (reminders.ListSending): the console's outbox. Only drafts that
-- were sent have queued_at; the others are left out of the index.
-- bulk_send_created: the bulk sends, the latest first (reminders.ListBulks).
--
-- Each is one more index for the writes of its table to keep (issue 31): customers change
-- status rarely, a draft is queued and delivered once, a bulk send is written once.

-- +goose Up
CREATE INDEX customer_status ON customer (contact_status, id);
CREATE INDEX reminder_draft_sending ON reminder_draft (state, queued_at, id) WHERE queued_at IS NOT NULL;
CREATE INDEX bulk_send_created ON bulk_send (created_at, id);

-- +goose Down
DROP INDEX bulk_send_created;
DROP INDEX reminder_draft_sending;
DROP INDEX customer_status;
