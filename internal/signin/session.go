package signin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/store"
)

// Session is a signed-in person's (or agent's) server-side session.
type Session struct {
	Principal *auth.Principal // as the verified ID token named it
	CSRF      string          // the token every form of the session carries
	Created   time.Time
	Expires   time.Time // absolute; the session also ends after IdleTTL without use
}

// secret returns a new random value of 32 bytes, base64url: a session cookie's value, a
// state, a nonce or a CSRF token.
func secret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// idHash is how a cookie value is stored: its SHA-256, so the table holds no credential.
func idHash(cookie string) []byte {
	h := sha256.Sum256([]byte(cookie))
	return h[:]
}

func micros(t time.Time) int64 { return t.UnixMicro() }

// sessions keeps sessions in the store (migration 00090).
type sessions struct {
	db  store.DB
	now func() time.Time
}

// maxSessionsPerSubject bounds one person's sessions: each sign-in is a row for hours, and
// anyone the issuer knows can sign in again and again.
const maxSessionsPerSubject = 10

// create records a new session for pr, behind the cookie value it returns, lasting ttl, and
// ends pr's oldest sessions past maxSessionsPerSubject and everyone's expired ones.
func (s *sessions) create(ctx context.Context, pr *auth.Principal, ttl time.Duration) (string, *Session, error) {
	cookie := secret()
	now := s.now()
	sess := &Session{Principal: pr, CSRF: secret(), Created: now, Expires: now.Add(ttl)}
	var authTime int64
	if !pr.AuthTime.IsZero() {
		authTime = micros(pr.AuthTime)
	}
	err := s.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		// Expired sessions go with the next sign-in.
		if _, err := tx.Exec(ctx, `DELETE FROM web_session WHERE expires_at <= $1`, micros(now)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO web_session (id_hash, subject, client_id, actor, kind, acr, auth_time, csrf, created_at, last_seen_at, expires_at, roles)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11)`, idHash(cookie), pr.Subject, pr.ClientID, pr.Actor, string(pr.Kind), pr.ACR,
			authTime, sess.CSRF, micros(now), micros(sess.Expires), strings.Join(pr.Roles, " ")); err != nil {
			return err
		}
		// The person's sessions past the newest maxSessionsPerSubject end.
		_, err := tx.Exec(ctx, `DELETE FROM web_session WHERE subject = $1 AND id_hash NOT IN
(SELECT id_hash FROM web_session WHERE subject = $1 ORDER BY created_at DESC, id_hash LIMIT $2)`, pr.Subject, maxSessionsPerSubject)
		return err
	})
	if err != nil {
		return "", nil, fmt.Errorf("signin: create session: %w", err)
	}
	return cookie, sess, nil
}

// touchEvery is how stale last_seen_at may get before a read refreshes it: a page view costs
// a write at most once a minute.
const touchEvery = time.Minute

// get returns the live session of the cookie value, or nil: none, past its absolute expiry,
// or idle longer than idle (an ended one is deleted). A live one's last use is recorded.
func (s *sessions) get(ctx context.Context, cookie string, idle time.Duration) (*Session, error) {
	var (
		pr                                   auth.Principal
		kind                                 string
		authTime, created, lastSeen, expires int64
		csrf, roles                          string
	)
	id := idHash(cookie)
	err := s.db.QueryRow(ctx, `SELECT subject, client_id, actor, kind, acr, auth_time, csrf, created_at, last_seen_at, expires_at, roles
FROM web_session WHERE id_hash = $1`, id).Scan(&pr.Subject, &pr.ClientID, &pr.Actor, &kind, &pr.ACR, &authTime, &csrf, &created, &lastSeen, &expires, &roles)
	if errors.Is(err, store.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("signin: read session: %w", err)
	}
	now := s.now()
	if !now.Before(time.UnixMicro(expires)) || now.Sub(time.UnixMicro(lastSeen)) >= idle {
		return nil, s.delete(ctx, cookie)
	}
	if now.Sub(time.UnixMicro(lastSeen)) >= touchEvery {
		if _, err := s.db.Exec(ctx, `UPDATE web_session SET last_seen_at = $2 WHERE id_hash = $1`, id, micros(now)); err != nil {
			return nil, fmt.Errorf("signin: touch session: %w", err)
		}
	}
	pr.Kind = auth.Kind(kind)
	if roles != "" {
		pr.Roles = strings.Fields(roles)
	}
	if authTime != 0 {
		pr.AuthTime = time.UnixMicro(authTime)
	}
	return &Session{Principal: &pr, CSRF: csrf, Created: time.UnixMicro(created), Expires: time.UnixMicro(expires)}, nil
}

// delete ends the session of the cookie value (none: nothing to do).
func (s *sessions) delete(ctx context.Context, cookie string) error {
	if _, err := s.db.Exec(ctx, `DELETE FROM web_session WHERE id_hash = $1`, idHash(cookie)); err != nil {
		return fmt.Errorf("signin: delete session: %w", err)
	}
	return nil
}
