-- Audit events carry a MAC (internal/auditlog); see the PostgreSQL migration of the same
-- number for the design. Events written before this migration have no MAC and are reported as
-- unauthenticated by `cobranca audit verify`; from now on a trigger refuses an event without
-- one (a CHECK added with the column would be tested against the existing rows).

-- +goose Up
ALTER TABLE audit_event ADD COLUMN server_time INTEGER;
ALTER TABLE audit_event ADD COLUMN nonce BLOB CHECK (nonce IS NULL OR length(nonce) = 16);
ALTER TABLE audit_event ADD COLUMN mac BLOB CHECK (mac IS NULL OR length(mac) = 32);

CREATE UNIQUE INDEX audit_event_nonce ON audit_event (nonce);

-- +goose StatementBegin
CREATE TRIGGER audit_event_authenticated BEFORE INSERT ON audit_event
WHEN NEW.server_time IS NULL OR NEW.nonce IS NULL OR NEW.mac IS NULL
BEGIN SELECT RAISE(ABORT, 'audit event without a MAC refused'); END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER audit_event_authenticated;
DROP INDEX audit_event_nonce;
ALTER TABLE audit_event DROP COLUMN mac;
ALTER TABLE audit_event DROP COLUMN nonce;
ALTER TABLE audit_event DROP COLUMN server_time;
