-- What a schedule's batch was approved to send, and what its send left out (issue 30).
--
-- send_ids is the JSON array of the draft ids the batch's bulk send plan sent when the batch
-- opened: exactly what the person approving it saw. When the approved batch runs, its plan is
-- computed again over those drafts only, so a draft that became sendable since (a customer
-- resumed, say) is never sent without approval, and one whose invoice was paid, disputed or
-- promised, or whose customer may no longer be contacted, is left out — that customer only,
-- not the whole batch. skipped gains the send's own skips ("send"), written with bulk_id.

-- +goose Up
ALTER TABLE schedule_batch ADD COLUMN send_ids text NOT NULL DEFAULT '[]';

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT UPDATE (skipped) ON schedule_batch TO cobranca_app;
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
        REVOKE UPDATE (skipped) ON schedule_batch FROM cobranca_app;
    END IF;
END
$$;
-- +goose StatementEnd
ALTER TABLE schedule_batch DROP COLUMN send_ids;
