-- Pending actions of critical calls (internal/approval).
--
-- approval: one critical call an agent (or a person) asked for, waiting for a person's decision
-- out of band. It names the exact call: the tool and the SHA-256 of the canonical arguments with
-- the idempotency key (the pipeline's request-state binding), so that only that call, retried,
-- runs. preview and side_effects are what the approver is shown; requested_by / _client /
-- _actor the caller (the actor is '' for a person). The state moves pending → approved |
-- rejected | expired, and approved → executed in the transaction of the call's effect; a
-- decided row records the approver's subject, acr and auth_time (microseconds, 0 when the
-- token had none) and when it was decided.
--
-- Times are microseconds since the epoch on the server's clock, like the idempotency keys.

-- +goose Up
CREATE TABLE approval (
    id                text   PRIMARY KEY CHECK (id ~ '^a_[a-z2-7]{26}$'),
    tool              text   NOT NULL CHECK (tool <> ''),
    args_digest       bytea  NOT NULL CHECK (length(args_digest) = 32),
    preview           text   NOT NULL,
    side_effects      text   NOT NULL,
    requested_by      text   NOT NULL,
    requested_client  text   NOT NULL,
    requested_actor   text   NOT NULL DEFAULT '',
    created_at        bigint NOT NULL,
    expires_at        bigint NOT NULL CHECK (expires_at > created_at),
    state             text   NOT NULL CHECK (state IN ('pending', 'approved', 'rejected', 'executed', 'expired')),
    approver          text,
    approver_acr      text,
    approver_auth_time bigint,
    decided_at        bigint,
    executed_at       bigint,
    CHECK ((state = 'pending') = (decided_at IS NULL) OR state = 'expired'),
    CHECK ((approver IS NULL) = (decided_at IS NULL))
);

-- An older client's retry finds its approval by the call itself.
CREATE INDEX approval_call ON approval (requested_by, requested_client, requested_actor, tool, args_digest, created_at);
CREATE INDEX approval_created_at ON approval (created_at);

-- The serving role (and the CLI, running as it) records pending actions, decides them and marks
-- them executed; it never deletes one, nor rewrites what was asked.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT, INSERT ON approval TO cobranca_app;
        GRANT UPDATE (state, approver, approver_acr, approver_auth_time, decided_at, executed_at) ON approval TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE approval;
