-- Stored files and their download links (internal/files); see the PostgreSQL migration of the
-- same number for the design. Times are microseconds since the epoch on the process's clock.

-- +goose Up
CREATE TABLE file (
    id          TEXT    PRIMARY KEY CHECK (length(id) = 28 AND id GLOB 'f_*' AND NOT substr(id, 3) GLOB '*[^a-z2-7]*'),
    name        TEXT    NOT NULL CHECK (name <> ''),
    media_type  TEXT    NOT NULL CHECK (media_type <> ''),
    size_bytes  INTEGER NOT NULL CHECK (size_bytes >= 0),
    sha256      BLOB    NOT NULL CHECK (length(sha256) = 32),
    customer_id TEXT    REFERENCES customer (id),
    created_by  TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
);

CREATE INDEX file_created_at ON file (created_at);

CREATE TABLE file_chunk (
    file_id TEXT    NOT NULL REFERENCES file (id),
    seq     INTEGER NOT NULL CHECK (seq >= 0),
    data    BLOB    NOT NULL CHECK (length(data) BETWEEN 1 AND 1048576),
    PRIMARY KEY (file_id, seq)
); -- a rowid table: WITHOUT ROWID suits small rows only (SQLite's advice)

CREATE TABLE file_link (
    id               TEXT    PRIMARY KEY CHECK (length(id) = 28 AND id GLOB 'l_*' AND NOT substr(id, 3) GLOB '*[^a-z2-7]*'),
    file_id          TEXT    NOT NULL REFERENCES file (id),
    expires_at       INTEGER NOT NULL,
    created_by       TEXT    NOT NULL,
    created_by_actor TEXT    NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL,
    revoked_at       INTEGER,
    revoked_by       TEXT,
    CHECK ((revoked_at IS NULL) = (revoked_by IS NULL))
) WITHOUT ROWID;

CREATE UNIQUE INDEX file_link_live ON file_link (file_id, expires_at) WHERE revoked_at IS NULL;

-- +goose Down
DROP TABLE file_link;
DROP TABLE file_chunk;
DROP TABLE file;
