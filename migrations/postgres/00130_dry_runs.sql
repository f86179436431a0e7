-- The dry runs that calls of tools with a mandatory dry run cite (internal/idempotency,
-- dryrun.go).
--
-- dry_runs: one row per caller (principal: subject, client and acting agent, as the
-- idempotency keys name it), tool and arguments (the SHA-256 of their canonical form, without
-- idempotencyKey, dryRun and planHash): the plan hash the latest dry run of those arguments
-- answered, until it expires. A call that cites a plan hash runs (or asks a person to approve
-- it) only if it names the row of its own caller, tool and arguments. A newer dry run of the
-- same arguments replaces the row; a caller keeps its newest rows only (the insert deletes the
-- older ones beyond a bound), and the reaper deletes expired ones, so the table stays the size
-- of what callers are about to do. Rows hold digests and hashes, never an argument.
--
-- Times are microseconds since the epoch on the server's clock, like the idempotency keys.

-- +goose Up
CREATE TABLE dry_runs (
    principal   text   NOT NULL,
    tool        text   NOT NULL,
    args_digest bytea  NOT NULL CHECK (length(args_digest) = 32),
    plan_hash   text   NOT NULL CHECK (plan_hash ~ '^[0-9a-f]{64}$'),
    created_at  bigint NOT NULL,
    expires_at  bigint NOT NULL CHECK (expires_at > created_at),
    PRIMARY KEY (principal, tool, args_digest)
);

CREATE INDEX dry_runs_expires_at ON dry_runs (expires_at);
CREATE INDEX dry_runs_principal ON dry_runs (principal, created_at);

-- The serving role records dry runs (a newer one rewrites the row), reads them, and deletes
-- the expired and the surplus ones.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT, INSERT, UPDATE, DELETE ON dry_runs TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE dry_runs;
