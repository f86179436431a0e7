// Package limits enforces cobranca's rate limits: how many calls an actor
// causes, as opposed to payload limits (how much work one call
// causes) and access control (who may call at all).
//
// The algorithm is GCRA (the generic cell rate algorithm, a token bucket
// stored as one timestamp per key: the theoretical arrival time, TAT). Its
// state lives in the store, so a limit is one limit whatever replica answers
// and survives restarts: on PostgreSQL one atomic statement per decision using
// the database clock (package limits/postgres), on SQLite the equivalent
// statement (package limits/sqlite). An authenticated request's origin and
// principal decisions are taken together, as one chain: one round trip and
// one commit (Limiter.DeferOrigin). In front of the store sits an in-process
// pre-limiter (golang.org/x/time/rate, bounded memory), with the store's
// recent refusals until their Retry-After, that may only refuse early, never
// admit on its own while the store answers.
//
// Three policies apply: per principal (subject + client id) and per origin
// (client IP) at the HTTP edge, answered with 429 and the RateLimit headers
// before any MCP work; and per principal × risk tier inside a tool call
// (medium, high and critical calls share the "write" budget; the "critical"
// budget counts the approvals critical calls ask people for), answered with
// the tool error rate_limited. A call whose contract weighs it by its size
// spends more than one unit of its tier budget, in one decision (Cost,
// Limiter.TierRest).
//
// When the store does not answer within the configured timeout, the HTTP
// limits go on under a local limiter holding each budget divided by the
// replica count, and so do low-tier calls; a tier budget (medium and above)
// fails closed with the retryable error unavailable.
package limits
