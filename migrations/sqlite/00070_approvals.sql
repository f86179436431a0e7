-- Pending actions of critical calls (internal/approval); see the PostgreSQL migration of the
-- same number for the design. Times are microseconds since the epoch on the process's clock.

-- +goose Up
CREATE TABLE approval (
    id                 TEXT    PRIMARY KEY CHECK (length(id) = 28 AND id GLOB 'a_*' AND NOT substr(id, 3) GLOB '*[^a-z2-7]*'),
    tool               TEXT    NOT NULL CHECK (tool <> ''),
    args_digest        BLOB    NOT NULL CHECK (length(args_digest) = 32),
    preview            TEXT    NOT NULL,
    side_effects       TEXT    NOT NULL,
    requested_by       TEXT    NOT NULL,
    requested_client   TEXT    NOT NULL,
    requested_actor    TEXT    NOT NULL DEFAULT '',
    created_at         INTEGER NOT NULL,
    expires_at         INTEGER NOT NULL CHECK (expires_at > created_at),
    state              TEXT    NOT NULL CHECK (state IN ('pending', 'approved', 'rejected', 'executed', 'expired')),
    approver           TEXT,
    approver_acr       TEXT,
    approver_auth_time INTEGER,
    decided_at         INTEGER,
    executed_at        INTEGER,
    CHECK ((state = 'pending') = (decided_at IS NULL) OR state = 'expired'),
    CHECK ((approver IS NULL) = (decided_at IS NULL))
) WITHOUT ROWID;

CREATE INDEX approval_call ON approval (requested_by, requested_client, requested_actor, tool, args_digest, created_at);
CREATE INDEX approval_created_at ON approval (created_at);

-- +goose Down
DROP TABLE approval;
