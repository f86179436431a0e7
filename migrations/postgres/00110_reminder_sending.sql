-- Sending reminder drafts (collections.send_reminder, internal/reminders, internal/outbox).
--
-- A draft is sent once: send_reminder moves it from draft to queued in the transaction that
-- enqueues its message in the outbox (River's job, outbox_id) and writes the audit event
-- email.external.sent; the delivery worker then moves it to sent (delivered_at) in the
-- transaction that completes the job, or to undeliverable (failed_at, failure_reason: the
-- mail server's reply code and the reason, never the recipient) when the server refuses it
-- for good. message_id is the message's Message-ID (<outbox_id.outbox@domain>), the same on
-- every attempt. queued_by / queued_by_actor are who asked for the send (the token's subject,
-- and the agent acting for it, '' for a person), approval_id the person's approval it ran
-- under. Times are microseconds since the epoch on the server's clock (as in 00050).
--
-- The natural key's partial unique index (WHERE state = 'draft') is unchanged: a draft that
-- is queued or sent leaves it, so the same reminder asked for again is a new draft.

-- +goose Up
ALTER TABLE reminder_draft DROP CONSTRAINT reminder_draft_state_check;
ALTER TABLE reminder_draft
    ADD CONSTRAINT reminder_draft_state_check
        CHECK (state IN ('draft', 'discarded', 'queued', 'sent', 'undeliverable')),
    ADD COLUMN outbox_id       bigint,
    ADD COLUMN message_id      text,
    ADD COLUMN queued_by       text,
    ADD COLUMN queued_by_actor text,
    ADD COLUMN approval_id     text,
    ADD COLUMN queued_at       bigint,
    ADD COLUMN delivered_at    bigint,
    ADD COLUMN failed_at       bigint,
    ADD COLUMN failure_reason  text,
    -- Every draft that left draft for the outbox says what it became and when, and only those.
    ADD CONSTRAINT reminder_draft_sending_check CHECK (
        (state IN ('queued', 'sent', 'undeliverable')) =
            (outbox_id IS NOT NULL AND message_id IS NOT NULL AND queued_by IS NOT NULL AND queued_at IS NOT NULL)
        AND (state = 'sent') = (delivered_at IS NOT NULL)
        AND (state = 'undeliverable') = (failed_at IS NOT NULL AND failure_reason IS NOT NULL));

-- The serving role moves a draft along its states and records the sending; still no delete.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT UPDATE (outbox_id, message_id, queued_by, queued_by_actor, approval_id, queued_at,
            delivered_at, failed_at, failure_reason) ON reminder_draft TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DELETE FROM reminder_draft WHERE state IN ('queued', 'sent', 'undeliverable');
ALTER TABLE reminder_draft DROP CONSTRAINT reminder_draft_sending_check;
ALTER TABLE reminder_draft
    DROP COLUMN outbox_id, DROP COLUMN message_id, DROP COLUMN queued_by, DROP COLUMN queued_by_actor,
    DROP COLUMN approval_id, DROP COLUMN queued_at, DROP COLUMN delivered_at, DROP COLUMN failed_at,
    DROP COLUMN failure_reason;
ALTER TABLE reminder_draft DROP CONSTRAINT reminder_draft_state_check;
ALTER TABLE reminder_draft ADD CONSTRAINT reminder_draft_state_check CHECK (state IN ('draft', 'discarded'));
