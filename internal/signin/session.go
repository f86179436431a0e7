package signin

import (
	"cmp"
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

// pending is a sign-in in progress: what the callback checks, and where it goes back to.
type pending struct {
	state, nonce, verifier string
	returnTo               string
	stepUp                 auth.StepUp
	created, expires       time.Time
	client                 []byte // clientHash of the address that started it
}

// secret returns a new random value of 32 bytes, base64url: a cookie value, a state, a nonce
// or a CSRF token.
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

// clientHash is how a pre-session records the client that started it (limits.ClientIP: an
// IPv4 address or an IPv6 /64): its SHA-256, so the table holds no address.
func clientHash(client string) []byte {
	h := sha256.Sum256([]byte("signin client\x00" + client))
	return h[:]
}

// sessions keeps pre-sessions and sessions in the store (migration 00090).
type sessions struct {
	db  store.DB
	now func() time.Time
	// maxSignins bounds the live pre-sessions in the store, maxPerClient those of one client
	// (0: DefaultMaxSignins, DefaultMaxSigninsPerClient): anyone may start a sign-in, so
	// without them anyone could fill the store.
	maxSignins, maxPerClient int
}

// The refusals of startSignin: the client, or the store, holds as many sign-ins in progress
// as it may.
var (
	errClientSignins = errors.New("signin: too many sign-ins in progress from this client")
	errSigninsFull   = errors.New("signin: too many sign-ins in progress")
)

// startSignin records p for the browser holding the cookie value binding, and deletes the
// pre-sessions and sessions that have expired. It refuses (errClientSignins, errSigninsFull)
// a pre-session past the bounds, recording nothing. Concurrent starts on PostgreSQL may each
// see the count before the others' rows: the bounds can be passed by the requests in flight.
func (s *sessions) startSignin(ctx context.Context, binding string, p *pending) error {
	var maxAge any
	if p.stepUp.MaxAge > 0 {
		maxAge = int64(p.stepUp.MaxAge / time.Second)
	}
	return s.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := s.reap(ctx, tx); err != nil {
			return err
		}
		// What is left is live. The counts stop at the bound, so each reads at most that many rows.
		perClient, total := cmp.Or(s.maxPerClient, DefaultMaxSigninsPerClient), cmp.Or(s.maxSignins, DefaultMaxSignins)
		var mine, all int64
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM web_signin WHERE client = $1 LIMIT $2) AS t`, p.client, perClient).Scan(&mine); err != nil {
			return fmt.Errorf("signin: count: %w", err)
		}
		if mine >= int64(perClient) {
			return errClientSignins
		}
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM web_signin LIMIT $1) AS t`, total).Scan(&all); err != nil {
			return fmt.Errorf("signin: count: %w", err)
		}
		if all >= int64(total) {
			return errSigninsFull
		}
		_, err := tx.Exec(ctx, `INSERT INTO web_signin (id_hash, state, nonce, verifier, return_to, acr_values, max_age, created_at, expires_at, client)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, idHash(binding), p.state, p.nonce, p.verifier, p.returnTo,
			strings.Join(p.stepUp.ACRValues, " "), maxAge, micros(p.created), micros(p.expires), p.client)
		if err != nil {
			return fmt.Errorf("signin: start: %w", err)
		}
		return nil
	})
}

// reap deletes the expired pre-sessions and sessions.
func (s *sessions) reap(ctx context.Context, tx store.Tx) error {
	now := micros(s.now())
	if _, err := tx.Exec(ctx, `DELETE FROM web_signin WHERE expires_at <= $1`, now); err != nil {
		return fmt.Errorf("signin: reap: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM web_session WHERE expires_at <= $1`, now); err != nil {
		return fmt.Errorf("signin: reap: %w", err)
	}
	return nil
}

// errNoSignin: no live sign-in for this browser (none started, replayed, or expired).
var errNoSignin = errors.New("signin: no sign-in in progress")

// finishSignin deletes and returns the pre-session of the cookie value binding: a callback
// uses it once. An expired one is errNoSignin.
func (s *sessions) finishSignin(ctx context.Context, binding string) (*pending, error) {
	var (
		p                pending
		acr              string
		maxAge           *int64
		created, expires int64
	)
	// In a transaction: a read-only handle (SQLite's readers) must not run the DELETE.
	err := s.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		return tx.QueryRow(ctx, `DELETE FROM web_signin WHERE id_hash = $1
RETURNING state, nonce, verifier, return_to, acr_values, max_age, created_at, expires_at, client`, idHash(binding)).
			Scan(&p.state, &p.nonce, &p.verifier, &p.returnTo, &acr, &maxAge, &created, &expires, &p.client)
	})
	if errors.Is(err, store.ErrNoRows) {
		return nil, errNoSignin
	}
	if err != nil {
		return nil, fmt.Errorf("signin: finish: %w", err)
	}
	p.created, p.expires = time.UnixMicro(created), time.UnixMicro(expires)
	if !s.now().Before(p.expires) {
		return nil, errNoSignin
	}
	p.stepUp.ACRValues = strings.Fields(acr)
	if maxAge != nil {
		p.stepUp.MaxAge = time.Duration(*maxAge) * time.Second
	}
	return &p, nil
}

// maxSessionsPerSubject bounds one person's sessions: each sign-in is a row for hours, and
// anyone the issuer knows can sign in again and again.
const maxSessionsPerSubject = 10

// create records a new session for pr, behind the cookie value it returns, lasting ttl, and
// ends pr's oldest sessions past maxSessionsPerSubject.
func (s *sessions) create(ctx context.Context, pr *auth.Principal, ttl time.Duration) (string, *Session, error) {
	cookie := secret()
	now := s.now()
	sess := &Session{Principal: pr, CSRF: secret(), Created: now, Expires: now.Add(ttl)}
	var authTime int64
	if !pr.AuthTime.IsZero() {
		authTime = micros(pr.AuthTime)
	}
	err := s.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
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
