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

# as_pg CMD...: runs CMD as the postgres user when we are root (PostgreSQL refuses root).
as_pg() { if [[ "$(id -u)" == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# start_postgres DIR PORT [SETTING...]: a throwaway cluster of PGBIN's in DIR/pg, its socket
# in DIR/pgsock, listening on 127.0.0.1:PORT with fsync and synchronous commit on (what a
# production database does) and each SETTING (name=value); sets postmaster to its pid.
start_postgres() {
  local dir="$1" port="$2" opts="" s
  shift 2
  for s in "$@"; do opts+=" -c $s"; done
  mkdir -p "$dir/pg" "$dir/pgsock"
  if [[ "$(id -u)" == 0 ]]; then chown postgres "$dir/pg" "$dir/pgsock"; fi
  as_pg "$PGBIN/initdb" -D "$dir/pg" -U postgres -A trust >/dev/null
  as_pg "$PGBIN/pg_ctl" -D "$dir/pg" -l "$dir/pg/log" -w \
    -o "-p $port -k $dir/pgsock -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on$opts" start >/dev/null
  postmaster="$(head -1 "$dir/pg/postmaster.pid")"
}

# stop_postgres DIR: stops the cluster start_postgres made in DIR, if it runs.
stop_postgres() {
  if [[ -f "$1/pg/postmaster.pid" ]]; then as_pg "$PGBIN/pg_ctl" -D "$1/pg" -m fast stop >/dev/null 2>&1 || true; fi
}
