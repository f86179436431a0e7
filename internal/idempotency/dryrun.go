package idempotency

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/store"
)

// DryRunTTL is how long a dry run of a tool whose dry run is mandatory may be cited by the
// real call (its planHash). It must outlast the gap between the two: an agent shows the
// preview to its person and waits for a go-ahead in its chat, minutes and sometimes tens of
// them; an hour covers that with room. Longer buys nothing: a dry run says what the call
// would do now, and the call recomputes its plan anyway (plan_changed when it moved). Past
// the call that cites it, the record is not needed: a critical call's approval binds the
// plan hash with the call, and lives COBRANCA_APPROVAL_TTL.
const DryRunTTL = time.Hour

// MaxDryRunsPerCaller bounds the dry runs kept for one caller (every tool together): the
// newest are kept, so the table is bounded by the callers at work, whatever they dry-run.
const MaxDryRunsPerCaller = 64

// DryRun is a dry run a later call may cite: the caller (as Key.Principal), the tool, the
// SHA-256 of the canonical arguments without idempotencyKey, dryRun and planHash, and the
// plan hash the dry run answered.
type DryRun struct {
	Principal, Tool string
	Args            []byte
	Plan            string
}

const (
	upsertDryRun = `INSERT INTO dry_runs (principal, tool, args_digest, plan_hash, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (principal, tool, args_digest) DO UPDATE
SET plan_hash = excluded.plan_hash, created_at = excluded.created_at, expires_at = excluded.expires_at`
	// The caller's rows older than its MaxDryRunsPerCaller newest (none when it has fewer:
	// the subquery is then NULL, and no comparison with NULL holds).
	trimDryRuns = `DELETE FROM dry_runs WHERE principal = $1 AND created_at <
(SELECT created_at FROM dry_runs WHERE principal = $1 ORDER BY created_at DESC LIMIT 1 OFFSET $2)`
	selectDryRun = `SELECT plan_hash, expires_at FROM dry_runs WHERE principal = $1 AND tool = $2 AND args_digest = $3`
	reapDryRuns  = `DELETE FROM dry_runs WHERE expires_at <= $1`
)

// RecordDryRun keeps d in tx for DryRunTTL, replacing an earlier dry run of the same caller,
// tool and arguments, and drops the caller's oldest dry runs beyond MaxDryRunsPerCaller.
func (s *Store) RecordDryRun(ctx context.Context, tx store.Tx, d DryRun) error {
	if err := d.check(); err != nil {
		return err
	}
	now := s.now()
	if _, err := tx.Exec(ctx, upsertDryRun, d.Principal, d.Tool, d.Args, d.Plan, now.UnixMicro(), now.Add(DryRunTTL).UnixMicro()); err != nil {
		return fmt.Errorf("idempotency: record dry run: %w", err)
	}
	if _, err := tx.Exec(ctx, trimDryRuns, d.Principal, MaxDryRunsPerCaller-1); err != nil {
		return fmt.Errorf("idempotency: trim dry runs: %w", err)
	}
	return nil
}

// DryRunRecorded reports whether d — its caller, tool, arguments and plan hash — is the
// latest dry run of those arguments by that caller, and has not expired.
func (s *Store) DryRunRecorded(ctx context.Context, q store.Querier, d DryRun) (bool, error) {
	if err := d.check(); err != nil {
		return false, err
	}
	var plan string
	var expires int64
	err := q.QueryRow(ctx, selectDryRun, d.Principal, d.Tool, d.Args).Scan(&plan, &expires)
	switch {
	case errors.Is(err, store.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("idempotency: read dry run: %w", err)
	}
	return expires > s.now().UnixMicro() && subtle.ConstantTimeCompare([]byte(plan), []byte(d.Plan)) == 1, nil
}

// check refuses what the table could never hold, before any SQL.
func (d DryRun) check() error {
	switch {
	case d.Principal == "" || d.Tool == "":
		return errors.New("idempotency: dry run without a principal or tool")
	case len(d.Args) != FingerprintLen:
		return fmt.Errorf("idempotency: dry run arguments digest of %d bytes, want %d", len(d.Args), FingerprintLen)
	case !ValidPlanHash(d.Plan):
		return errors.New("idempotency: plan hash is not " + contract.PlanHashRule)
	}
	return nil
}

// ValidPlanHash reports whether h is a plan hash: a SHA-256 in lower-case hex.
func ValidPlanHash(h string) bool {
	if len(h) != contract.PlanHashLen {
		return false
	}
	for i := range len(h) {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
