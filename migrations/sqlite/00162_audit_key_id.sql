-- Audit events name the key their MAC is under; see the PostgreSQL migration of the same
-- number.

-- +goose Up
ALTER TABLE audit_event ADD COLUMN key_id TEXT CHECK (key_id IS NULL OR (length(key_id) = 16 AND key_id NOT GLOB '*[^0-9a-f]*'));

-- +goose Down
ALTER TABLE audit_event DROP COLUMN key_id;
