-- What a schedule's batch was approved to send: as migrations/postgres/00232, which says why.

-- +goose Up
ALTER TABLE schedule_batch ADD COLUMN send_ids text NOT NULL DEFAULT '[]';

-- +goose Down
ALTER TABLE schedule_batch DROP COLUMN send_ids;
