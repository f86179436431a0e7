-- The dry runs that calls of tools with a mandatory dry run cite (internal/idempotency,
-- dryrun.go); see the PostgreSQL migration of the same number for the design. Times are
-- microseconds since the epoch on the process's clock.

-- +goose Up
CREATE TABLE dry_runs (
    principal   TEXT    NOT NULL,
    tool        TEXT    NOT NULL,
    args_digest BLOB    NOT NULL CHECK (length(args_digest) = 32),
    plan_hash   TEXT    NOT NULL CHECK (length(plan_hash) = 64 AND NOT plan_hash GLOB '*[^0-9a-f]*'),
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL CHECK (expires_at > created_at),
    PRIMARY KEY (principal, tool, args_digest)
) WITHOUT ROWID;

CREATE INDEX dry_runs_expires_at ON dry_runs (expires_at);
CREATE INDEX dry_runs_principal ON dry_runs (principal, created_at);

-- +goose Down
DROP TABLE dry_runs;
