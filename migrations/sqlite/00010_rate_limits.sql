-- Rate limits (internal/limits); see the PostgreSQL migration of the same number. tat is
-- microseconds since the epoch on the process's clock (one file, one host).

-- +goose Up
CREATE TABLE rate_limit (
    key TEXT    PRIMARY KEY,
    tat INTEGER NOT NULL
) WITHOUT ROWID;

-- +goose Down
DROP TABLE rate_limit;
