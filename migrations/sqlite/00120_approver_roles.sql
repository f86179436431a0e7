-- Approver roles (issue 13, review): a person decides a critical call only with one of the
-- roles its contract names (approverRoles), read from the roles claim (COBRANCA_ROLES_CLAIM).
--
-- web_session.roles: the roles the signed-in person's verified ID token named, space
-- separated ('' for none; a role holds no space, internal/auth), which the approval page
-- checks (internal/signin).
-- oauth_code.roles: the roles the developer chose on the development sign-in page, space
-- separated, written into the access token and the ID token the code is redeemed for
-- (internal/authserver).
--
-- The serving role's grants on both tables cover the new columns.

-- +goose Up
ALTER TABLE web_session ADD COLUMN roles text NOT NULL DEFAULT '';
ALTER TABLE oauth_code ADD COLUMN roles text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE oauth_code DROP COLUMN roles;
ALTER TABLE web_session DROP COLUMN roles;
