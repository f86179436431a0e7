-- Write-offs (issue 14, the forbidden tier): a person records that an invoice's debt will not
-- be collected (internal/writeoffs), through the admin API or `cobranca write-off`, never an
-- agent.
--
-- One write-off per invoice: invoice_id is unique (the operator's own invoice id, as in
-- analyze_portfolio). customer_id names a stored customer. amount_cents is the amount written
-- off, in BRL cents. reason is the person's words, data never interpreted. written_off_by is
-- the person's subject, client_id the client the call came through, acr and auth_time (µs
-- since the epoch, 0 when the token had none) how recently and how strongly the person signed
-- in: the step-up the contract demanded.
--
-- A write-off is a permanent record: the serving role may read and insert, never update or
-- delete (no grant); reversing one is a new accounting entry, not an edit of this row. Triggers
-- refuse UPDATE, DELETE and TRUNCATE for everyone, the owner included (a deployment that runs
-- the server as the owner, without cobranca_app, keeps the rule), as the audit log's do.

-- +goose Up
CREATE TABLE write_off (
    id             text   PRIMARY KEY,
    invoice_id     text   NOT NULL UNIQUE,
    customer_id    text   NOT NULL REFERENCES customer (id),
    amount_cents   bigint NOT NULL CHECK (amount_cents > 0),
    reason         text   NOT NULL CHECK (reason <> ''),
    written_off_by text   NOT NULL CHECK (written_off_by <> ''),
    client_id      text   NOT NULL,
    acr            text   NOT NULL DEFAULT '',
    auth_time      bigint NOT NULL DEFAULT 0,
    created_at     bigint NOT NULL
);

-- A customer's write-offs.
CREATE INDEX write_off_customer ON write_off (customer_id, created_at);

-- +goose StatementBegin
CREATE FUNCTION write_off_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'write-offs are permanent: % on % refused', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END
$$;
-- +goose StatementEnd

CREATE TRIGGER write_off_permanent BEFORE UPDATE OR DELETE ON write_off
    FOR EACH ROW EXECUTE FUNCTION write_off_refuse_change();
CREATE TRIGGER write_off_no_truncate BEFORE TRUNCATE ON write_off
    FOR EACH STATEMENT EXECUTE FUNCTION write_off_refuse_change();

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'cobranca_app') THEN
        GRANT SELECT, INSERT ON write_off TO cobranca_app;
    ELSE
        RAISE NOTICE 'role cobranca_app does not exist: no grants made (see README, "Database roles")';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE write_off;
DROP FUNCTION write_off_refuse_change();
