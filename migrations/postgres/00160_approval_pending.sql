-- The operator metrics' reading of pending approvals (cobranca_approvals_pending and the age of
-- the oldest, internal/approval Pending): an index of the live ones only. A pending approval
-- past its expiry is never rewritten (it reads as expired), so the index starts at expires_at:
-- the metric's range scan (expires_at > now) touches the approvals still waiting, however many
-- expired ones the table keeps. created_at is in it so that the scan reads the index alone.

-- +goose Up
CREATE INDEX approval_pending ON approval (expires_at, created_at) WHERE state = 'pending';

-- +goose Down
DROP INDEX approval_pending;
