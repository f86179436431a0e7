# Shared by scripts/bench.sh and scripts/flood.sh (sourced, not run).

# start_cobranca BIN PORT DEBUG_PORT DATA_DIR LOG [VAR=VALUE...] starts
# `BIN serve` on 127.0.0.1:PORT with profiles on DEBUG_PORT, waits until it
# is ready, and sets cob_pid. Rate limits stay on (every call takes its
# durable decisions in the store) but are set high enough that the load
# generator's identity is never refused. The metrics listener is off: a load
# run does not scrape it, and a build from before COBRANCA_METRICS_ADDR
# existed refuses the variable, so it is set only for builds that know it.
start_cobranca() {
  local bin="$1" port="$2" dport="$3" data="$4" log="$5"
  shift 5
  local metrics=()
  if grep -aq COBRANCA_METRICS_ADDR "$bin"; then metrics=(COBRANCA_METRICS_ADDR=off); fi
  env "$@" "${metrics[@]}" COBRANCA_ADDR="127.0.0.1:$port" COBRANCA_DATA_DIR="$data" COBRANCA_LOG_LEVEL=warn \
    COBRANCA_RATE_PRINCIPAL="1000000/1s,burst=1000000" COBRANCA_RATE_ORIGIN="1000000/1s,burst=1000000" \
    COBRANCA_DEBUG_ADDR="127.0.0.1:$dport" \
    "$bin" serve >"$log" 2>&1 &
  cob_pid=$!
  for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "cobranca did not become ready:" >&2
  cat "$log" >&2
  return 1
}

# cpu_ticks PID: the process's user + system CPU time, in clock ticks.
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

# pg_ticks POSTMASTER_PID: PostgreSQL's CPU time in clock ticks — the
# postmaster's own and its reaped children's, plus every live child's.
pg_ticks() {
  local t c
  t="$(awk '{print $14+$15+$16+$17}' "/proc/$1/stat")"
  for c in $(pgrep -P "$1"); do t=$((t + $( (cpu_ticks "$c" 2>/dev/null) || echo 0))); done
  echo "$t"
}
