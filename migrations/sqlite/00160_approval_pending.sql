-- The operator metrics' index of the live pending approvals; see the PostgreSQL migration of
-- the same number.

-- +goose Up
CREATE INDEX approval_pending ON approval (expires_at, created_at) WHERE state = 'pending';

-- +goose Down
DROP INDEX approval_pending;
