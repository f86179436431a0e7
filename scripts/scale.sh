#!/usr/bin/env bash
# Scale model (issue 31, aim 4): three `cobranca serve` replicas on one PostgreSQL, driven to
# saturation by one workload at a time and by all of them at once, measuring on each side what
# a call costs. Prints one table: calls/s per workload; CPU per call of the replicas (all three
# together) and of PostgreSQL (the postmaster and every backend, those that ended during the
# window included); WAL bytes per call; the connections each replica held.
#
#   scripts/scale.sh                          # idle analyze medium outbox mixed, 20 s windows
#   WORKLOAD=medium DURATION=10s scripts/scale.sh
#   WORKLOAD="analyze medium" C_ANALYZE=6 C_MEDIUM=12 scripts/scale.sh
#
# Workloads (WORKLOAD, space-separated, in order):
#   idle     the replicas with no load: background CPU, WAL and connections
#   analyze  collections.analyze_portfolio (low tier, K invoices) from shared/bench/mcpload, one
#            load generator per replica, C_ANALYZE callers in all
#   medium   collections.prepare_reminder (medium tier: a customer and a draft written, an
#            idempotency key and the write budget spent, an audit event) for a new customer per
#            call, C_MEDIUM callers round-robin over the replicas (scripts/scaleload)
#   outbox   e-mails sent through the outbox to an SMTP sink that accepts everything: DRAFTS
#            drafts prepared beforehand (not measured), then bulk sends of BULK drafts each
#            (dry run, approval asked, `cobranca approvals approve`, approved retry) as fast as
#            the replicas deliver; a call here is one e-mail delivered, and the window lasts
#            until the last one queued is at the sink
#   mixed    all three at once; the last lines compare the CPU measured with the sum the single
#            workloads of the same run predict
#
# CPU comes from /proc/PID/stat (utime+stime; for the postmaster also cutime+cstime, which
# hold the backends that exited). The machine is shared: prefer the CPU-per-call columns to the
# rates. Everything runs on loopback; PostgreSQL is a throwaway cluster (fsync and synchronous
# commit on) in a temporary directory. Needs go and PostgreSQL 15 under /usr/lib/postgresql/15/bin.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
. scripts/lib.sh
SHARED="${SHARED:-$ROOT/../shared}"
WORKLOAD="${WORKLOAD:-idle analyze medium outbox mixed}"
DURATION="${DURATION:-20s}" WARMUP="${WARMUP:-3s}" K="${K:-500}"
C_ANALYZE="${C_ANALYZE:-9}" C_MEDIUM="${C_MEDIUM:-8}" BULK="${BULK:-200}" BULK_C="${BULK_C:-2}" DRAFTS="${DRAFTS:-8000}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
PORT="${PORT:-18180}" DEBUG_PORT="${DEBUG_PORT:-16180}" PG_PORT="${PG_PORT:-15532}" SMTP_PORT="${SMTP_PORT:-12525}"
MAX_CONNECTIONS="${MAX_CONNECTIONS:-100}"
REPLICAS=3

for w in $WORKLOAD; do
  case "$w" in idle | analyze | medium | outbox | mixed) ;; *) echo "WORKLOAD: unknown workload $w" >&2; exit 2 ;; esac
done
secs="$(awk -v d="$DURATION" 'BEGIN{ if (d ~ /m$/) { sub(/m$/,"",d); d*=60 } else sub(/s$/,"",d); print d+0 }')"

work="$(mktemp -d /tmp/cobranca-scale.XXXXXX)"
chmod 755 "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  stop_postgres "$work"
  rm -rf "$work"
}
trap cleanup EXIT
sql() { as_pg "$PGBIN/psql" -h "$work/pgsock" -p "$PG_PORT" -U postgres -d cobranca -Atqc "$1"; }
secret() { od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; }

echo "== building" >&2
go build -o "$work/cobranca" ./cmd/cobranca
go build -o "$work/scaleload" ./scripts/scaleload
(cd "$SHARED/bench/mcpload" && go build -o "$work/mcpload" .)

echo "== starting PostgreSQL (max_connections=$MAX_CONNECTIONS)" >&2
start_postgres "$work" "$PG_PORT" "max_connections=$MAX_CONNECTIONS"
as_pg "$PGBIN/psql" -h "$work/pgsock" -p "$PG_PORT" -U postgres -qc 'CREATE DATABASE cobranca' >/dev/null

"$work/scaleload" sink -smtp "127.0.0.1:$SMTP_PORT" -http "127.0.0.1:$((SMTP_PORT + 1))" >"$work/sink.log" 2>&1 &
pids+=("$!")
sink_url="http://127.0.0.1:$((SMTP_PORT + 1))"

# What the replicas share, as behind a load balancer: the database, the public URL and
# resource (so the development issuer and every token's audience are one), the keys, the SMTP
# relay. Each has its own port and data directory; the development signing key is copied into
# each. The write and critical budgets are set out of the way: this measures capacity.
db_url="postgres://postgres@127.0.0.1:$PG_PORT/cobranca?sslmode=disable"
mkdir -p "$work/keys"
shared_env=(COBRANCA_PUBLIC_URL="http://127.0.0.1:$PORT" COBRANCA_RESOURCE="http://127.0.0.1:$PORT/mcp"
  COBRANCA_AUDIT_KEY="$(secret)" COBRANCA_AUDIT_SIGNING_KEY="$work/keys/audit-signing.pem"
  COBRANCA_REQUEST_STATE_KEYS="s1:$(secret)" COBRANCA_LINK_KEYS="l1:$(secret)"
  COBRANCA_SMTP_URL="smtp://127.0.0.1:$SMTP_PORT?starttls=off" COBRANCA_MAIL_FROM=cobranca@scale.example
  COBRANCA_STEPUP_ACR=urn:cobranca:acr:mfa COBRANCA_REPLICAS=$REPLICAS COBRANCA_AUTO_MIGRATE=false
  COBRANCA_RATE_WRITE="1000000/1s,burst=1000000" COBRANCA_RATE_CRITICAL="1000000/1h,burst=1000000"
  COBRANCA_RATE_STORE_TIMEOUT=2s)
cli_env=("${shared_env[@]}" COBRANCA_DATABASE_URL="$db_url" COBRANCA_DATA_DIR="$work/r1" COBRANCA_ADDR="127.0.0.1:$PORT"
  COBRANCA_METRICS_ADDR=off)
cli() { env "${cli_env[@]}" "$work/cobranca" "$@"; }

echo "== migrating, starting $REPLICAS replicas" >&2
cli migrate >/dev/null
mkdir -p "$work/r1" && chmod 700 "$work/r1"
cli token --sub warm --scope collections:read >/dev/null # creates r1's development signing key
rpids=() urls=()
for i in $(seq "$REPLICAS"); do
  d="$work/r$i"
  if [[ "$i" != 1 ]]; then mkdir -p "$d" && chmod 700 "$d" && cp -p "$work/r1/dev-signing-key.pem" "$d/"; fi
  start_cobranca "$work/cobranca" "$((PORT + i - 1))" "$((DEBUG_PORT + i - 1))" "$d" "$work/r$i.log" "${shared_env[@]}" \
    COBRANCA_DATABASE_URL="$db_url&application_name=cobranca-r$i" || exit 1
  rpids+=("$cob_pid"); pids+=("$cob_pid"); urls+=("http://127.0.0.1:$((PORT + i - 1))/mcp")
done
url_list="$(IFS=,; echo "${urls[*]}")"

tokens() { # fresh tokens: the approver's step-up wants a recent sign-in
  cli token --sub carla --scope collections:read --ttl 1h >"$work/reader.tok"
  cli token --sub alice --agent scale-bot --scope "reminders:write reminders:send collections:read" --ttl 1h >"$work/agent.tok"
  cli token --sub bruno --role collections.approver --acr urn:cobranca:acr:mfa --ttl 1h >"$work/approver.tok"
}
tokens
# Every replica accepts every token: the same key, issuer and audience.
for u in "${urls[@]}"; do
  "$work/mcpload" -url "$u" -auth "Bearer $(cat "$work/reader.tok")" -c 1 -n 1 -warmup 0s -k 10 >/dev/null ||
    { echo "replica $u refused the shared token" >&2; exit 1; }
done

hz="$(getconf CLK_TCK)"
replica_ticks() { local t=0 p; for p in "${rpids[@]}"; do t=$((t + $(cpu_ticks "$p"))); done; echo "$t"; }
busy_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }
wal() { sql 'SELECT pg_current_wal_lsn()'; }
# conn_sampler FILE: until killed, every second, the most PostgreSQL connections each replica
# held (from the sockets, so the sampling costs PostgreSQL nothing), one line per replica.
conn_sampler() {
  local out="$1" i p n; local -a peak=()
  for i in "${!rpids[@]}"; do peak[i]=0; done
  while :; do
    local s; s="$(ss -Htnp state established "( dport = :$PG_PORT )" 2>/dev/null || true)"
    for i in "${!rpids[@]}"; do
      p="${rpids[i]}"; n="$(grep -c "pid=$p," <<<"$s" || true)"
      ((n > peak[i])) && peak[i]=$n
    done
    printf '%s\n' "${peak[@]}" >"$out.tmp" && mv "$out.tmp" "$out"
    sleep 1
  done
}
# gcs: garbage collections of the three replicas so far (their debug listeners' heap profiles).
gcs() {
  local t=0 i n
  for i in $(seq "$REPLICAS"); do
    n="$(curl -fsS --max-time 10 "http://127.0.0.1:$((DEBUG_PORT + i - 1))/debug/pprof/heap?debug=1" | awk '/^# NumGC = /{print $4}')"
    t=$((t + ${n:-0}))
  done
  echo "$t"
}
kv() { grep -E "^$1=" "$2" | cut -d= -f2; }

analyze_load() { # DURATION WARMUP OUTPREFIX: one mcpload per replica, C_ANALYZE callers in all
  local d="$1" w="$2" out="$3" i c lp=()
  for i in "${!urls[@]}"; do
    c=$(( C_ANALYZE / REPLICAS + (i < C_ANALYZE % REPLICAS ? 1 : 0) ))
    ((c > 0)) || continue
    "$work/mcpload" -url "${urls[i]}" -auth "Bearer $(cat "$work/reader.tok")" -c "$c" -d "$d" -warmup "$w" -k "$K" >"$out.$i" 2>&1 &
    lp+=("$!")
  done
  local rc=0; for i in "${lp[@]}"; do wait "$i" || rc=1; done
  return "$rc"
}
analyze_ok() { cat "$1".* | grep -oE '[0-9]+ ok' | awk '{s+=$1} END{print s+0}'; }

declare -A us_r us_p wal_b
rows=() notes=()
row() { # WORKLOAD KIND CALLS SECONDS REPLICA_TICKS PG_TICKS WAL_BYTES CONNS BUSY_CORES
  rows+=("$(awk -v w="$1" -v k="$2" -v n="$3" -v s="$4" -v r="$5" -v p="$6" -v wal="$7" -v cn="$8" -v b="$9" -v hz="$hz" 'BEGIN{
    rc = r/hz/s; pc = p/hz/s
    if (n > 0) printf "%-8s %-8s %7d %8.1f %9.0f %9.0f %8.0f %7.2f %7.2f %6.2f %9.0f %9.0f  %s",
      w, k, n, n/s, r/hz*1e6/n, p/hz*1e6/n, wal/n, rc, pc, b, n/(r/hz), n/(p/hz), cn
    else printf "%-8s %-8s %7s %8s %9s %9s %8s %7.2f %7.2f %6.2f %9s %9s  %s   (WAL %.0f B/s)",
      w, k, "-", "-", "-", "-", "-", rc, pc, b, "-", "-", cn, wal/s }')")
}

measure() { # WORKLOAD: runs it once over the window and records its rows
  local w="$1" t0 r0 p0 b0 l0 g0 t1 r1 p1 b1 l1 g1 samp
  # Set up, unmeasured: fresh tokens, a warm-up, the outbox's drafts.
  tokens
  case "$w" in
    analyze) analyze_load "$WARMUP" 0s "$work/warm" || true ;;
    medium) "$work/scaleload" run -urls "$url_list" -token-file "$work/agent.tok" -d "$WARMUP" -medium "$C_MEDIUM" -prefix "warm-$w" >/dev/null ;;
  esac
  if [[ "$w" == outbox || "$w" == mixed ]]; then
    echo "== $w: preparing $DRAFTS drafts (not measured)" >&2
    "$work/scaleload" prepare -urls "$url_list" -token-file "$work/agent.tok" -n "$DRAFTS" -c "$C_MEDIUM" -prefix "d-$w" -out "$work/drafts.$w"
  fi
  sleep 2
  echo "== $w: ${DURATION}" >&2
  conn_sampler "$work/conns.$w" & samp=$!
  g0="$(gcs)"; t0="$(date +%s.%N)"; r0="$(replica_ticks)"; p0="$(pg_ticks "$postmaster")"; b0="$(busy_ticks)"; l0="$(wal)"
  local outbox_args=(-drafts "$work/drafts.$w" -bulk "$BULK" -bulk-c "$BULK_C" -approver-token-file "$work/approver.tok"
    -cobranca "$work/cobranca" -sink "$sink_url")
  local drive=(env "${cli_env[@]}" "$work/scaleload" run -urls "$url_list" -token-file "$work/agent.tok" -d "$DURATION" -prefix "$w")
  case "$w" in
    idle) sleep "$secs" ;;
    analyze) analyze_load "$DURATION" 0s "$work/out.$w" ;;
    medium) "${drive[@]}" -medium "$C_MEDIUM" >"$work/drive.$w" ;;
    outbox) "${drive[@]}" "${outbox_args[@]}" >"$work/drive.$w" ;;
    mixed)
      analyze_load "$DURATION" 0s "$work/out.$w" & local ap=$!
      "${drive[@]}" -medium "$C_MEDIUM" "${outbox_args[@]}" >"$work/drive.$w"
      wait "$ap" ;;
  esac
  t1="$(date +%s.%N)"; r1="$(replica_ticks)"; p1="$(pg_ticks "$postmaster")"; b1="$(busy_ticks)"; l1="$(wal)"; g1="$(gcs)"
  kill "$samp" 2>/dev/null; wait "$samp" 2>/dev/null || true
  local el walb conns busy
  el="$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')"
  walb="$(sql "SELECT pg_wal_lsn_diff('$l1', '$l0')")"
  conns="$(paste -sd/ "$work/conns.$w")"
  busy="$(awk -v d="$((b1 - b0))" -v hz="$hz" -v s="$el" 'BEGIN{print d/hz/s}')"
  # Who holds the connections now: each replica's store pool and River's LISTEN connection, and the
  # limiters' pools (application_name cobranca-limits, all replicas together).
  notes+=("$w: connections by application: $(sql "SELECT string_agg(a || '=' || n, ' ' ORDER BY a) FROM (SELECT application_name a, count(*) n
    FROM pg_stat_activity WHERE datname = 'cobranca' AND application_name LIKE 'cobranca%' GROUP BY 1) x")")
  [[ -f "$work/drive.$w" ]] && sed "s/^/[$w] /" "$work/drive.$w" >&2
  local na=0 nm=0 no=0 sa="$el" sm="$el" so="$el"
  case "$w" in
    idle) row idle - 0 "$el" "$((r1 - r0))" "$((p1 - p0))" "$walb" "$conns" "$busy"; return ;;
    analyze | mixed) na="$(analyze_ok "$work/out.$w")"; sa="$secs" ;;
  esac
  if [[ "$w" == medium || "$w" == mixed ]]; then nm="$(kv medium_ok "$work/drive.$w")"; sm="$(kv medium_s "$work/drive.$w")"; fi
  if [[ "$w" == outbox || "$w" == mixed ]]; then no="$(kv outbox_sent "$work/drive.$w")"; so="$(kv outbox_s "$work/drive.$w")"; fi
  if [[ "$w" != mixed ]]; then
    local n=$((na + nm + no)) s="$sa"; [[ "$w" == medium ]] && s="$sm"; [[ "$w" == outbox ]] && s="$so"
    row "$w" "$w" "$n" "$el" "$((r1 - r0))" "$((p1 - p0))" "$walb" "$conns" "$busy"
    # The rate over the workload's own span; CPU over the whole window.
    us_r[$w]="$(awk -v r="$((r1 - r0))" -v hz="$hz" -v n="$n" 'BEGIN{print r/hz*1e6/n}')"
    us_p[$w]="$(awk -v p="$((p1 - p0))" -v hz="$hz" -v n="$n" 'BEGIN{print p/hz*1e6/n}')"
    wal_b[$w]="$(awk -v b="$walb" -v n="$n" 'BEGIN{print b/n}')"
    notes+=("$w: $n calls in ${s}s of load, ${el}s measured, $((g1 - g0)) garbage collections in the replicas")
    return
  fi
  # Mixed: one row of rates per kind, and the whole window's CPU against what the single runs
  # predict for these counts.
  rows+=("$(printf '%-8s %-8s %7d %8.1f' mixed analyze "$na" "$(awk -v n="$na" -v s="$sa" 'BEGIN{print n/s}')")")
  rows+=("$(printf '%-8s %-8s %7d %8.1f' mixed medium "$nm" "$(awk -v n="$nm" -v s="$sm" 'BEGIN{print n/s}')")")
  rows+=("$(printf '%-8s %-8s %7d %8.1f' mixed outbox "$no" "$(awk -v n="$no" -v s="$so" 'BEGIN{print n/s}')")")
  rows+=("$(awk -v w=mixed -v r="$((r1 - r0))" -v p="$((p1 - p0))" -v s="$el" -v hz="$hz" -v wal="$walb" -v cn="$conns" -v b="$busy" 'BEGIN{
    printf "%-8s %-8s %7s %8s %9s %9s %8s %7.2f %7.2f %6.2f %9s %9s  %s", w, "all", "-", "-", "-", "-", "-", r/hz/s, p/hz/s, b, "-", "-", cn }')")
  notes+=("mixed: $((na + nm + no)) calls, ${el}s measured, $((g1 - g0)) garbage collections in the replicas")
  if [[ -n "${us_r[analyze]:-}" && -n "${us_r[medium]:-}" && -n "${us_r[outbox]:-}" ]]; then
    notes+=("$(awk -v na="$na" -v nm="$nm" -v no="$no" -v ra="${us_r[analyze]}" -v rm="${us_r[medium]}" -v ro="${us_r[outbox]}" \
      -v pa="${us_p[analyze]}" -v pm="${us_p[medium]}" -v po="${us_p[outbox]}" -v r="$((r1 - r0))" -v p="$((p1 - p0))" -v hz="$hz" \
      -v wa="${wal_b[analyze]}" -v wm="${wal_b[medium]}" -v wo="${wal_b[outbox]}" -v wal="$walb" 'BEGIN{
      er = (na*ra + nm*rm + no*ro)/1e6; ep = (na*pa + nm*pm + no*po)/1e6; ew = na*wa + nm*wm + no*wo
      printf "mixed: replica CPU %.1f s measured, %.1f s predicted by the single runs (%+.0f%%); PostgreSQL %.1f s measured, %.1f s predicted (%+.0f%%); WAL %.1f MB measured, %.1f MB predicted (%+.0f%%)",
        r/hz, er, (r/hz/er - 1)*100, p/hz, ep, (p/hz/ep - 1)*100, wal/1e6, ew/1e6, (wal/ew - 1)*100 }')")
  fi
}

for w in $WORKLOAD; do measure "$w"; done

printf '\n%-8s %-8s %7s %8s %9s %9s %8s %7s %7s %6s %9s %9s  %s\n' workload kind calls calls/s \
  replica_us pg_us WAL_B replica pg busy per_r_core per_pg_core pg_conns
printf '%-8s %-8s %7s %8s %9s %9s %8s %7s %7s %6s %9s %9s  %s\n' '' '' '' '' /call /call /call cores cores cores calls/s calls/s 'per replica (peak)'
printf '%s\n' "${rows[@]}"
printf '%s\n' "${notes[@]}"
echo "$REPLICAS replicas, $(nproc) cores, window $DURATION, analyze c=$C_ANALYZE k=$K, medium c=$C_MEDIUM, outbox bulk=$BULK x $BULK_C senders from $DRAFTS drafts, max_connections=$MAX_CONNECTIONS"
