#!/usr/bin/env bash
# Connection flood: CPU per call before, during and after a flood of idle and
# trickling connections, all on loopback.
#
# Starts cobranca (embedded SQLite store, every control on, limits set high
# enough never to refuse the load generator), then, in three phases, drives
# shared/bench/mcpload against it (c=8, 500 invoices) and reads the server's
# CPU time, GC count and heap (through COBRANCA_DEBUG_ADDR), and a /healthz
# probe:
#
#   before   no flood
#   during   scripts/flood holds FLOOD_N idle/trickling connections from
#            127.0.0.2… for FLOOD_D (the phase starts 10 s into it)
#   after    SETTLE (30 s) after the flood has ended
#
# idle_held_MB is what the Go runtime holds (what COBRANCA_MEMORY_LIMIT
# counts: Sys - HeapReleased) at the start of the phase, before its load;
# heap_inuse_MB and rss_MB are read at its end, under load.
#
#   scripts/flood.sh                        # this tree
#   BIN=/tmp/cobranca-old scripts/flood.sh  # another build, e.g. before a change
#   FLOOD_N=5000 WINDOW=5s scripts/flood.sh
#
# Bounded: the flood stops by itself after FLOOD_D (at most 2m), never holds
# more connections than the open-file limit allows, and targets loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
. scripts/lib.sh
SHARED="${SHARED:-$ROOT/../shared}"
C="${C:-8}" K="${K:-500}" WINDOW="${WINDOW:-10s}" SETTLE="${SETTLE:-30}"
FLOOD_N="${FLOOD_N:-20000}" FLOOD_D="${FLOOD_D:-40s}"
PORT="${PORT:-18090}" DEBUG_PORT="${DEBUG_PORT:-16090}"
BIN="${BIN:-}"

work="$(mktemp -d /tmp/cobranca-flood.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== building" >&2
if [[ -z "$BIN" ]]; then go build -o "$work/cobranca" ./cmd/cobranca; BIN="$work/cobranca"; fi
go build -o "$work/flood" ./scripts/flood
(cd "$SHARED/bench/mcpload" && go build -o "$work/mcpload" .)

start_cobranca "$BIN" "$PORT" "$DEBUG_PORT" "$work/data" "$work/cobranca.log" || exit 1
pid="$cob_pid"; pids+=("$pid")
tok="$(env COBRANCA_DATA_DIR="$work/data" COBRANCA_ADDR="127.0.0.1:$PORT" "$BIN" token --sub bench --scope collections:read --ttl 1h)"
load() { "$work/mcpload" -url "http://127.0.0.1:$PORT/mcp" -auth "Bearer $tok" -c "$C" -k "$K" "$@"; }
load -d 3s -warmup 0s >/dev/null 2>&1 || true

hz="$(getconf CLK_TCK)"
memstat() { # NAME from the runtime's MemStats, as the heap profile prints them
  curl -fsS --max-time 10 "http://127.0.0.1:$DEBUG_PORT/debug/pprof/heap?debug=1" | awk -v k="# $1 = " 'index($0,k)==1 {print substr($0,length(k)+1)}'
}
probe() { # /healthz from 127.0.0.1: status and seconds, within 10 s
  curl -s -o /dev/null --max-time 10 -w '%{http_code} %{time_total}' "http://127.0.0.1:$PORT/healthz" || true
}

rows=()
phase() {
  local name="$1" h held t0 g0 out t1 g1 ok rps heap rss
  # What the runtime holds (what the memory limit counts) before the load.
  held="$(( $(memstat Sys) - $(memstat HeapReleased) ))"
  h="$(probe)"
  t0="$(cpu_ticks "$pid")"; g0="$(memstat NumGC)"
  out="$(load -d "$WINDOW" -warmup 0s 2>&1)"
  t1="$(cpu_ticks "$pid")"; g1="$(memstat NumGC)"
  heap="$(memstat HeapInuse)"
  rss="$(awk '/VmRSS/{print $2/1024}' "/proc/$pid/status")"
  echo "$out" | sed "s/^/[$name] /" >&2
  ok="$(echo "$out" | grep -oE '[0-9]+ ok' | grep -oE '[0-9]+' | head -1)"
  rps="$(echo "$out" | grep -oE '[0-9.]+ req/s' | grep -oE '[0-9.]+' | head -1)"
  rows+=("$(awk -v n="$name" -v d="$((t1 - t0))" -v hz="$hz" -v ok="${ok:-0}" -v rps="${rps:-0}" -v gc="$((g1 - g0))" \
    -v heap="$heap" -v rss="$rss" -v h="$h" -v held="$held" 'BEGIN{ split(h, p, " ");
      printf "%-7s %12.1f %8.1f %12s %9s %12.1f %8.1f %7s %9s", n, held/1048576, rps, (ok>0 ? sprintf("%.3f", d*1000/hz/ok) : "nan"),
        (ok>0 ? sprintf("%.3f", gc/ok) : "nan"), heap/1048576, rss, p[1], p[2] }')")
}

echo "== before" >&2
phase before
echo "== flood: $FLOOD_N connections for $FLOOD_D" >&2
"$work/flood" -addr "127.0.0.1:$PORT" -n "$FLOOD_N" -d "$FLOOD_D" -mode mixed >"$work/flood.out" 2>&1 &
flood_pid=$!; pids+=("$flood_pid")
sleep 10
echo "== during" >&2
phase during
wait "$flood_pid" || true
cat "$work/flood.out" >&2
echo "== settling ${SETTLE}s" >&2
sleep "$SETTLE"
echo "== after" >&2
phase after

printf '\n%-7s %12s %8s %12s %9s %12s %8s %7s %9s\n' phase idle_held_MB req/s cpu_ms/call GC/call heap_inuse_MB rss_MB healthz healthz_s
printf '%s\n' "${rows[@]}"
cat "$work/flood.out"
grep -c 'connection cap reached' "$work/cobranca.log" | sed 's/^/cap log lines: /' || true
grep -ciE 'too many open files' "$work/cobranca.log" | sed 's/^/"too many open files" log lines: /' || true
