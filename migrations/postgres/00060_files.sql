-- Stored files and their download links (internal/files).
--
-- file: a document an operator attached to collections (an invoice PDF, a boleto, a
-- statement), added by `cobranca files add`, with its size and SHA-256. It is never changed
-- once written (no UPDATE grant).
--
-- file_chunk: the file's content, in order, in pieces of 1 MiB (files.ChunkSize; the last one
-- shorter, none for an empty file), written with the file in one transaction. It lives here,
-- not on a replica's disk, so that every replica serves every link; a download reads one piece
-- per query, so it holds no more than a piece in memory and the store reads no more than a
-- piece for it (a substring of one large value made SQLite read the whole value per piece).
-- STORAGE EXTERNAL keeps a piece uncompressed out of line (documents are compressed already).
--
-- file_link: a signed, expiring, revocable download link; created_by is the subject who asked
-- for it, created_by_actor the agent acting on its behalf ('' for a person), as customer's
-- status_set_by and status_set_actor (00040). The URL is not stored: it is
-- recomputed from the row under the current link key (COBRANCA_LINK_KEYS), so the table holds
-- no credential. The partial unique index makes files.create_download_link naturally
-- idempotent under concurrency: one live link per (file, expiry instant); a revoked one frees
-- its place for a new link.
--
-- Times are microseconds since the epoch on the server's clock, like the idempotency keys.

-- +goose Up
CREATE TABLE file (
    id          text   PRIMARY KEY CHECK (id ~ '^f_[a-z2-7]{26}$'),
    name        text   NOT NULL CHECK (name <> ''),
    media_type  text   NOT NULL CHECK (media_type <> ''),
    size_bytes  bigint NOT NULL CHECK (size_bytes >= 0),
    sha256      bytea  NOT NULL CHECK (length(sha256) = 32),
    customer_id text   REFERENCES customer (id),
    created_by  text   NOT NULL,
    created_at  bigint NOT NULL
);

CREATE INDEX file_created_at ON file (created_at);

CREATE TABLE file_chunk (
    file_id text    NOT NULL REFERENCES file (id),
    seq     integer NOT NULL CHECK (seq >= 0),
    data    bytea   NOT NULL CHECK (length(data) BETWEEN 1 AND 1048576),
    PRIMARY KEY (file_id, seq)
);

ALTER TABLE file_chunk ALTER COLUMN data SET STORAGE EXTERNAL;

CREATE TABLE file_link (
    id               text   PRIMARY KEY CHECK (id ~ '^l_[a-z2-7]{26}$'),
    file_id          text   NOT NULL REFERENCES file (id),
    expires_at       bigint NOT NULL,
    created_by       text   NOT NULL,
    created_by_actor text   NOT NULL DEFAULT '',
    created_at       bigint NOT NULL,
    revoked_at       bigint,
    revoked_by       text,
    CHECK ((revoked_at IS NULL) = (revoked_by IS NULL))
);

CREATE UNIQUE INDEX file_link_live ON file_link (file_id, expires_at) WHERE revoked_at IS NULL;

-- The serving role reads files and makes links; the CLI, running as it, adds files and revokes
-- links. A file is never changed or deleted by it, and a link's only change is its revocation.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT, INSERT ON file, file_chunk TO cobranca_app;
        GRANT SELECT, INSERT ON file_link TO cobranca_app;
        GRANT UPDATE (revoked_at, revoked_by) ON file_link TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE file_link;
DROP TABLE file_chunk;
DROP TABLE file;
