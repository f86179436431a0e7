#!/usr/bin/env bash
# Side-by-side load test: the TypeScript reference (shared/bench/peer-ts) and
# cobranca with every control on (JWT, durable rate limits and audit on
# PostgreSQL), both on loopback, driven by shared/bench/mcpload with the same
# payload and concurrency, alternating A B A B. Prints one table: req/s, p50,
# p99, server CPU per call, PostgreSQL's CPU per call while that server ran
# (pg_ms: every backend, the audit writer's and sealer's included), the load
# generator's CPU per call (client_ms), peak RSS, and the ratios.
#
#   scripts/bench.sh                 # defaults: c=8, 10s runs, 500 invoices, 2 rounds
#   ROUNDS=3 DURATION=15s scripts/bench.sh
#   STORE=sqlite scripts/bench.sh    # cobranca on the embedded store instead
#   PROFILE=/tmp/cpu.pprof scripts/bench.sh   # also a CPU profile of cobranca's last run
#   BASE=e3b0d84 scripts/bench.sh    # also an earlier build of cobranca, in turn with this one
#   FLOOR=0 scripts/bench.sh         # without the bare Go server (shared/bench/floor)
#   HEAP=/tmp/heap.pprof scripts/bench.sh     # the live heap of cobranca (and .base) at the end
#   INPROC=0 scripts/bench.sh        # without the in-process floor benchmarks after the runs
#   COB_ENV="GOGC=200" BASE_ENV="…"  # more environment for cobranca / the base build
#
# rss_MB is the peak resident set (VmHWM); anon_MB and file_MB split the
# resident set at the end into the heap and stacks (anonymous) and the
# binary's pages and other mapped files.
#
# Each round runs every server once, in turn: the reference, the bare floor
# server (the least a Go server does for the call: one fast decode, group, one
# encode, no controls), cobranca, and the BASE build if given (its own
# database in the same PostgreSQL, its own data directory).
#
# After the runs it measures the in-process floor — decode + validate +
# analyze + encode of the same payload, nothing else — on the idle machine,
# two ways: with cobranca's own decoder and encoder (mcpapi.BenchmarkFloor)
# and with encoding/json (BenchmarkFloorStdlib, how issue 6 states its floor
# figures), and prints cobranca's CPU per call as a multiple of each.
#
# Needs: go, node + npm (the reference), PostgreSQL 15 binaries under
# /usr/lib/postgresql/15/bin (for STORE=postgres, the default).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
. scripts/lib.sh
SHARED="${SHARED:-$ROOT/../shared}"
C="${C:-8}" DURATION="${DURATION:-10s}" WARMUP="${WARMUP:-3s}" K="${K:-500}" ROUNDS="${ROUNDS:-2}"
STORE="${STORE:-postgres}"
PGBIN="${PGBIN:-/usr/lib/postgresql/15/bin}"
REF_PORT="${REF_PORT:-18081}" COB_PORT="${COB_PORT:-18080}" PG_PORT="${PG_PORT:-15432}" DEBUG_PORT="${DEBUG_PORT:-16060}"
PROFILE="${PROFILE:-}"
BASE="${BASE:-}" FLOOR="${FLOOR:-1}" FLOOR_PORT="${FLOOR_PORT:-18090}" BASE_PORT="${BASE_PORT:-18082}"

work="$(mktemp -d /tmp/cobranca-bench.XXXXXX)"
chmod 755 "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  stop_postgres "$work"
  rm -rf "$work"
}
trap cleanup EXIT


echo "== building" >&2
go build -o "$work/cobranca" ./cmd/cobranca
if [[ -n "$BASE" ]]; then
  git worktree add -q --detach "$work/base-src" "$BASE"
  (cd "$work/base-src" && go build -o "$work/base" ./cmd/cobranca)
  git worktree remove --force "$work/base-src"
fi
[[ "$FLOOR" == 1 ]] && (cd "$SHARED/bench/floor" && go build -o "$work/floor" .)
(cd "$SHARED/bench/mcpload" && go build -o "$work/mcpload" .)
cp -r "$SHARED/bench/peer-ts" "$work/peer-ts" && chmod -R u+w "$work/peer-ts"
(cd "$work/peer-ts" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)

env_db=() postmaster=""
if [[ "$STORE" == postgres ]]; then
  echo "== starting PostgreSQL" >&2
  start_postgres "$work" "$PG_PORT"
  env_db=(COBRANCA_DATABASE_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable")
  env_base=(COBRANCA_DATABASE_URL="postgres://postgres@127.0.0.1:$PG_PORT/base?sslmode=disable")
  [[ -n "$BASE" ]] && as_pg "$PGBIN/psql" -h "$work/pgsock" -p "$PG_PORT" -U postgres -qc 'CREATE DATABASE base' >/dev/null
fi

echo "== starting servers" >&2
(cd "$work/peer-ts" && PORT=$REF_PORT exec node server.mjs) >"$work/ref.log" 2>&1 &
ref_pid=$!; pids+=("$ref_pid")
read -ra cob_env <<<"${COB_ENV:-}"
read -ra base_env <<<"${BASE_ENV:-}"
start_cobranca "$work/cobranca" "$COB_PORT" "$DEBUG_PORT" "$work/data" "$work/cobranca.log" "${env_db[@]}" "${cob_env[@]}" || exit 1
pids+=("$cob_pid")
servers=(reference)
if [[ "$FLOOR" == 1 ]]; then
  "$work/floor" "127.0.0.1:$FLOOR_PORT" >"$work/floor.log" 2>&1 &
  floor_pid=$!; pids+=("$floor_pid"); servers+=(floor)
fi
servers+=(cobranca)
if [[ -n "$BASE" ]]; then
  main_pid="$cob_pid"
  start_cobranca "$work/base" "$BASE_PORT" "$((DEBUG_PORT + 1))" "$work/base-data" "$work/base.log" "${env_base[@]}" "${base_env[@]}" || exit 1
  base_pid="$cob_pid"; cob_pid="$main_pid"; pids+=("$base_pid"); servers+=(base)
fi
sleep 1

auth=()
if "$work/cobranca" help 2>/dev/null | grep -qE '^  (cobranca )?token'; then
  tok="$(env COBRANCA_DATA_DIR="$work/data" COBRANCA_ADDR="127.0.0.1:$COB_PORT" "$work/cobranca" token --sub bench --scope collections:read --ttl 1h)"
  auth=(-auth "Bearer $tok")
fi
base_auth=()
if [[ -n "$BASE" ]]; then
  tok="$(env COBRANCA_DATA_DIR="$work/base-data" COBRANCA_ADDR="127.0.0.1:$BASE_PORT" "$work/base" token --sub bench --scope collections:read --ttl 1h)"
  base_auth=(-auth "Bearer $tok")
fi

hz="$(getconf CLK_TCK)"
# children_ticks: the CPU of this shell's reaped children, the load generator's runs among
# them (each run's mcpload is waited for before the next reading).
children_ticks() { awk '{print $16+$17}' "/proc/$$/stat"; }

declare -A sum_rps sum_p50 sum_p99 sum_cpu sum_pg sum_cl n
run() { # name pid url [auth...]
  local name="$1" pid="$2" url="$3"; shift 3
  "$work/mcpload" -url "$url" -c "$C" -d "$WARMUP" -k "$K" "$@" >/dev/null 2>&1 || true
  local prof_pid=""
  if [[ -n "$PROFILE" && ( "$name" == cobranca || "$name" == base ) && "$r" == "$ROUNDS" ]]; then
    # The run's length less a second, within the debug listener's 1..60 s.
    local secs; secs="$(awk -v d="$DURATION" 'BEGIN{ if (d ~ /m$/) { sub(/m$/,"",d); d*=60 } else sub(/s$/,"",d);
      s=int(d)-1; print (s<1 ? 1 : (s>60 ? 60 : s)) }')"
    local dport="$DEBUG_PORT" pout="$PROFILE"
    [[ "$name" == base ]] && dport=$((DEBUG_PORT + 1)) pout="$PROFILE.base"
    curl -fsS -o "$pout" "http://127.0.0.1:$dport/debug/pprof/profile?seconds=$secs" &
    prof_pid=$!
  fi
  local t0 g0=0 g1=0 c0 c1; t0="$(cpu_ticks "$pid")"
  c0="$(children_ticks)"
  [[ -n "$postmaster" ]] && g0="$(pg_ticks "$postmaster")"
  local out; out="$("$work/mcpload" -url "$url" -c "$C" -d "$DURATION" -warmup 0s -k "$K" "$@" 2>&1)"
  local t1; t1="$(cpu_ticks "$pid")"
  c1="$(children_ticks)"
  [[ -n "$postmaster" ]] && g1="$(pg_ticks "$postmaster")"
  if [[ -n "$prof_pid" ]]; then wait "$prof_pid" && echo "== CPU profile of $name's last run: $pout" >&2; fi
  echo "$out" | sed "s/^/[$name] /" >&2
  local ok rps p50 p99
  ok="$(echo "$out" | grep -oE '[0-9]+ ok' | grep -oE '[0-9]+' | head -1)"
  rps="$(echo "$out" | grep -oE '[0-9.]+ req/s' | grep -oE '[0-9.]+' | head -1)"
  p50="$(echo "$out" | grep -oE 'p50[= ]+[0-9.]+(ms|µs|s)' | head -1 | grep -oE '[0-9.]+(ms|µs|s)')"
  p99="$(echo "$out" | grep -oE 'p99[= ]+[0-9.]+(ms|µs|s)' | head -1 | grep -oE '[0-9.]+(ms|µs|s)')"
  local cpu_ms
  cpu_ms="$(awk -v d="$((t1 - t0))" -v hz="$hz" -v ok="${ok:-0}" 'BEGIN{ if (ok>0) printf "%.3f", d*1000/hz/ok; else print "nan" }')"
  sum_rps[$name]="$(awk -v a="${sum_rps[$name]:-0}" -v b="$rps" 'BEGIN{print a+b}')"
  sum_p50[$name]="$(awk -v a="${sum_p50[$name]:-0}" -v b="$(to_ms "$p50")" 'BEGIN{print a+b}')"
  sum_p99[$name]="$(awk -v a="${sum_p99[$name]:-0}" -v b="$(to_ms "$p99")" 'BEGIN{print a+b}')"
  sum_cpu[$name]="$(awk -v a="${sum_cpu[$name]:-0}" -v b="$cpu_ms" 'BEGIN{print a+b}')"
  local pg_ms
  pg_ms="$(awk -v d="$((g1 - g0))" -v hz="$hz" -v ok="${ok:-0}" 'BEGIN{ if (ok>0) printf "%.3f", d*1000/hz/ok; else print "nan" }')"
  sum_pg[$name]="$(awk -v a="${sum_pg[$name]:-0}" -v b="$pg_ms" 'BEGIN{print a+b}')"
  local cl_ms
  cl_ms="$(awk -v d="$((c1 - c0))" -v hz="$hz" -v ok="${ok:-0}" 'BEGIN{ if (ok>0) printf "%.3f", d*1000/hz/ok; else print "nan" }')"
  sum_cl[$name]="$(awk -v a="${sum_cl[$name]:-0}" -v b="$cl_ms" 'BEGIN{print a+b}')"
  n[$name]=$(( ${n[$name]:-0} + 1 ))
  echo "round $r $name $rps req/s p99 $p99 cpu ${cpu_ms} ms/call pg ${pg_ms} client ${cl_ms} ms/call" >>"$work/rounds"
}
to_ms() { awk -v v="$1" 'BEGIN{ if (v ~ /µs$/) {sub(/µs/,"",v); print v/1000} else if (v ~ /ms$/) {sub(/ms/,"",v); print v+0} else {sub(/s/,"",v); print v*1000} }'; }

for r in $(seq "$ROUNDS"); do
  echo "== round $r" >&2
  run reference "$ref_pid" "http://127.0.0.1:$REF_PORT/mcp"
  [[ "$FLOOR" == 1 ]] && run floor "$floor_pid" "http://127.0.0.1:$FLOOR_PORT/mcp"
  run cobranca "$cob_pid" "http://127.0.0.1:$COB_PORT/mcp" "${auth[@]}"
  [[ -n "$BASE" ]] && run base "$base_pid" "http://127.0.0.1:$BASE_PORT/mcp" "${base_auth[@]}"
done

cat "$work/rounds"
declare -A pid_of=([reference]="$ref_pid" [cobranca]="$cob_pid" [floor]="${floor_pid:-}" [base]="${base_pid:-}")
avg() { awk -v s="$1" -v n="$2" 'BEGIN{printf "%.2f", s/n}'; }
declare -A a_rps a_p99 a_cpu
printf '\n%-10s %10s %9s %9s %13s %12s %12s %9s %9s %9s\n' server req/s p50_ms p99_ms cpu_ms/call pg_ms/call client_ms rss_MB anon_MB file_MB
for s in "${servers[@]}"; do
  a_rps[$s]="$(avg "${sum_rps[$s]}" "${n[$s]}")"; a_p99[$s]="$(avg "${sum_p99[$s]}" "${n[$s]}")"
  a_cpu[$s]="$(avg "${sum_cpu[$s]}" "${n[$s]}")"
  printf '%-10s %10s %9s %9s %13s %12s %12s %9.1f %9.1f %9.1f\n' "$s" "${a_rps[$s]}" "$(avg "${sum_p50[$s]}" "${n[$s]}")" "${a_p99[$s]}" "${a_cpu[$s]}" "$(avg "${sum_pg[$s]}" "${n[$s]}")" "$(avg "${sum_cl[$s]}" "${n[$s]}")" \
    "$(awk '/VmHWM/{print $2/1024}' "/proc/${pid_of[$s]}/status")" \
    "$(awk '/RssAnon/{print $2/1024}' "/proc/${pid_of[$s]}/status")" "$(awk '/RssFile/{print $2/1024}' "/proc/${pid_of[$s]}/status")"
done
# HEAP=F: the live heap of cobranca (F) and of the base build (F.base) after the last round.
if [[ -n "${HEAP:-}" ]]; then
  curl -fsS -o "$HEAP" "http://127.0.0.1:$DEBUG_PORT/debug/pprof/heap"
  [[ -n "$BASE" ]] && curl -fsS -o "$HEAP.base" "http://127.0.0.1:$((DEBUG_PORT + 1))/debug/pprof/heap"
fi
awk -v a="${a_rps[cobranca]}" -v b="${a_rps[reference]}" -v p="${a_p99[cobranca]}" -v q="${a_p99[reference]}" -v x="${a_cpu[cobranca]}" -v y="${a_cpu[reference]}" \
  'BEGIN{printf "ratios: throughput %.2fx, p99 %.2fx of the reference, cpu/call %.2fx\n", a/b, p/q, x/y}'
[[ "$FLOOR" == 1 ]] && awk -v a="${a_rps[cobranca]}" -v b="${a_rps[floor]}" -v p="${a_p99[cobranca]}" -v q="${a_p99[floor]}" \
  'BEGIN{printf "against the bare floor server: throughput %.2fx, p99 %.2fx\n", a/b, p/q}'
[[ -n "$BASE" ]] && awk -v a="${a_rps[cobranca]}" -v b="${a_rps[base]}" -v p="${a_p99[cobranca]}" -v q="${a_p99[base]}" \
  'BEGIN{printf "against '"$BASE"': throughput %.2fx, p99 %.2fx\n", a/b, p/q}'
echo "store: $STORE, c=$C, duration=$DURATION x $ROUNDS rounds, $K invoices"

# The in-process floor, measured with the servers idle (stopped) so it has the
# machine to itself, as the issue defines it.
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
pids=()
sleep 1
floor_ns() { # the best of 3 runs of one benchmark, in ns/op
  go test -run '^$' -bench "^$1\$" -benchtime 2s -count 3 ./internal/mcpapi/ 2>/dev/null |
    awk -v b="$1" '$1 ~ "^"b"(-[0-9]+)?$" { for (i=1;i<NF;i++) if ($(i+1)=="ns/op") { if (m==""||$i<m) m=$i } } END{ print m }'
}
f_own="" f_std=""
[[ "${INPROC:-1}" == 1 ]] && { f_own="$(floor_ns BenchmarkFloor)"; f_std="$(floor_ns BenchmarkFloorStdlib)"; }
if [[ -n "$f_own" && -n "$f_std" ]]; then
  awk -v f="$f_own" -v g="$f_std" -v x="$c_cpu" 'BEGIN{
    printf "in-process floor, cobranca'"'"'s decoder and encoder (BenchmarkFloor, best of 3): %.3f ms; cobranca cpu/call = %.2fx\n", f/1e6, x/(f/1e6)
    printf "in-process floor, encoding/json (BenchmarkFloorStdlib, best of 3):       %.3f ms; cobranca cpu/call = %.2fx\n", g/1e6, x/(g/1e6) }'
fi
