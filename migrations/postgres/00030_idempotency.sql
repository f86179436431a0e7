-- Idempotency keys and spent request-state nonces (internal/idempotency).
--
-- idempotency_key: a tool call with side effects that carries an idempotencyKey reserves
-- (principal, tool, key) inside the transaction of its effect and stores its answer there, so
-- the effect, its audit event and the answer a retry gets back commit together or not at all.
-- The fingerprint is a SHA-256 digest of the canonical arguments: a retry with other arguments
-- is told apart from a replay without the table keeping any argument. The response is kept
-- as sent, for a replay byte for byte; it is the caller's own answer, returned only to the same
-- principal. Concurrent duplicates are kept apart by a transaction-scoped advisory lock on a
-- hash of the key, not by a row lock, so that the second one is answered at once
-- ("in progress") instead of queueing behind the first.
--
-- request_state_nonce: the single-use nonce of each sealed request state (internal/reqstate)
-- that came back, spent in the transaction of the call it let through: a replayed state finds
-- its nonce spent, on any replica.
--
-- Times are microseconds since the epoch on the server's clock, as the rows are only compared
-- with it; expires_at is indexed because the reaper deletes by it. Rows hold hashes, opaque
-- keys and the caller's own answer, never a payload of another caller.

-- +goose Up
CREATE TABLE idempotency_key (
    principal   text   NOT NULL,
    tool        text   NOT NULL,
    key         text   NOT NULL,
    fingerprint bytea  NOT NULL CHECK (length(fingerprint) = 32),
    response    bytea  NOT NULL,
    created_at  bigint NOT NULL,
    expires_at  bigint NOT NULL,
    PRIMARY KEY (principal, tool, key)
);

CREATE INDEX idempotency_key_expires_at ON idempotency_key (expires_at);

CREATE TABLE request_state_nonce (
    nonce      bytea  PRIMARY KEY CHECK (length(nonce) = 16),
    expires_at bigint NOT NULL
);

CREATE INDEX request_state_nonce_expires_at ON request_state_nonce (expires_at);

-- Begin's lock and read in one round trip. The read must come after the lock in a snapshot
-- of its own: a statement that did both would read with a snapshot taken before the lock was
-- granted, and miss the row of a holder that committed in between. In a VOLATILE function each
-- statement takes a new snapshot (read committed), so the SELECT sees every holder's commit.
-- Not locked: locked is false, the rest NULL (the caller answers "in progress").
-- +goose StatementBegin
CREATE FUNCTION idempotency_begin(lock_id bigint, p_principal text, p_tool text, p_key text,
    OUT locked boolean, OUT fingerprint bytea, OUT response bytea, OUT expires_at bigint)
VOLATILE LANGUAGE plpgsql AS $$
BEGIN
    locked := pg_try_advisory_xact_lock(lock_id);
    IF locked THEN
        SELECT k.fingerprint, k.response, k.expires_at INTO fingerprint, response, expires_at
        FROM idempotency_key k
        WHERE k.principal = p_principal AND k.tool = p_tool AND k.key = p_key;
    END IF;
END
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION idempotency_begin(bigint, text, text, text) FROM PUBLIC;

-- No UPDATE: a stored answer is never rewritten, only deleted once expired.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT, INSERT, DELETE ON idempotency_key, request_state_nonce TO cobranca_app;
        GRANT EXECUTE ON FUNCTION idempotency_begin(bigint, text, text, text) TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION idempotency_begin(bigint, text, text, text);
DROP TABLE request_state_nonce;
DROP TABLE idempotency_key;
