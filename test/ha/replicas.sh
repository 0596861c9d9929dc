#!/usr/bin/env bash
# Many replicas on one machine: two of each built service, behind a round-robin HAProxy (Debian's
# `haproxy`) on loopback, as a cluster runs them behind its Service.
#
#   test/ha/replicas.sh start [storage gateway worker]   # needs `npm run build`; waits until all are ready
#   test/ha/replicas.sh stop
#
# The environment is the services' own, with infra/local/services.sh's defaults. PORT, STORAGE_PORT and
# WORKER_PORT are the balanced ports HAProxy listens on; replica i (1, 2) of a service listens on its port
# + 10 × i. STORAGE_URL names the balanced storage port, so each gateway reaches both storage services. The
# workers are not behind a port clients use (each consumes every queue); HAProxy still answers their
# /readyz and /metrics on WORKER_PORT, from one replica or the other.
# UHP_HA_DIR: this topology's folder (haproxy.cfg, pids, one log per replica: <service>-<i>.log).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PORT="${PORT:-8080}" STORAGE_PORT="${STORAGE_PORT:-8081}" WORKER_PORT="${WORKER_PORT:-8082}"
export STORAGE_URL="${STORAGE_URL:-http://127.0.0.1:$STORAGE_PORT}"
# The local S3 server's keys (infra/local/s3.sh creates that user), as infra/local/services.sh sets them.
export S3_ACCESS_KEY_ID="${S3_ACCESS_KEY_ID:-uhp-dev-access}"
export S3_SECRET_ACCESS_KEY="${S3_SECRET_ACCESS_KEY:-uhp-dev-secret-key-0123456789}"
DIR="${UHP_HA_DIR:-$ROOT/.data/ha-$PORT}"
REPLICAS=(1 2)
declare -A PORT_OF=([storage]="$STORAGE_PORT" [gateway]="$PORT" [worker]="$WORKER_PORT")
mkdir -p "$DIR"

running() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Per request (mode http, a client's keep-alive connection does not pin it to one replica), streaming
# bodies both ways (no http-buffer-request), timeouts longer than any test's slowest upload or long poll.
# A replica that refuses the connection is retried on the other; a request already sent never is. No health
# checks: a replica that became ready between two checks would stay out of the balance until the next one,
# and the tests ask right away.
haproxy_config() {
  cat <<EOF
global
  maxconn 4000

defaults
  mode http
  balance roundrobin
  timeout connect 5s
  timeout client 10m
  timeout server 10m
  timeout http-request 10m
  timeout http-keep-alive 60s
  timeout queue 30s
  retries 3
  option redispatch 1
EOF
  for name in "$@"; do
    printf '\nfrontend %s\n  bind 127.0.0.1:%s\n  default_backend %s_replicas\n' "$name" "${PORT_OF[$name]}" "$name"
    printf '\nbackend %s_replicas\n' "$name"
    for i in "${REPLICAS[@]}"; do
      printf '  server %s%s 127.0.0.1:%s\n' "$name" "$i" $((${PORT_OF[$name]} + 10 * i))
    done
  done
}

wait_ready() { # wait_ready NAME I PORT
  local name="$1" i="$2" port="$3" deadline=$((SECONDS + ${UHP_START_TIMEOUT_S:-60}))
  until curl -fsS -m 2 "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
    if ! running "$DIR/$name-$i.pid" || ((SECONDS > deadline)); then
      echo "replicas: $name $i is not ready on 127.0.0.1:$port; last lines of $DIR/$name-$i.log:" >&2
      tail -n 30 "$DIR/$name-$i.log" >&2 || true
      return 1
    fi
    sleep 0.3
  done
}

start_replica() { # start_replica NAME I
  local name="$1" i="$2" port=$((${PORT_OF[$1]} + 10 * $2)) variable
  case "$name" in gateway) variable=PORT ;; storage) variable=STORAGE_PORT ;; worker) variable=WORKER_PORT ;; esac
  (cd "$ROOT" && export "$variable=$port" && exec setsid node --enable-source-maps "dist/apps/$name/src/main.js" \
    >>"$DIR/$name-$i.log" 2>&1 </dev/null) &
  echo $! >"$DIR/$name-$i.pid"
}

start() {
  local names=("$@")
  ((${#names[@]})) || names=(storage gateway worker)
  [[ -f "$ROOT/dist/apps/gateway/src/main.js" ]] || { echo "replicas: not built; run 'npm run build' first" >&2; exit 1; }
  bash "$(dirname "${BASH_SOURCE[0]}")/tools.sh"
  stop # what an interrupted run of this folder left
  export GLIBC_TUNABLES="${GLIBC_TUNABLES:-glibc.malloc.trim_threshold=33554432:glibc.malloc.mmap_threshold=4194304:glibc.malloc.arena_max=2}"
  haproxy_config "${names[@]}" >"$DIR/haproxy.cfg"
  haproxy -c -q -f "$DIR/haproxy.cfg"
  haproxy -D -p "$DIR/haproxy.pid" -f "$DIR/haproxy.cfg"
  # Storage first, as the gateways check it at start. One replica after the other: two workers starting side by
  # side on this busy two-core machine have come up unable to load Prisma's query compiler (its first query
  # failed, and every one after it), a fault not understood yet; rollouts start pods one by one too.
  for name in storage gateway worker; do
    [[ " ${names[*]} " == *" $name "* ]] || continue
    for i in "${REPLICAS[@]}"; do
      start_replica "$name" "$i"
      wait_ready "$name" "$i" $((${PORT_OF[$name]} + 10 * i))
    done
    echo "replicas: 2 × $name ready behind 127.0.0.1:${PORT_OF[$name]} (logs $DIR/$name-{1,2}.log)"
  done
}

stop() {
  local pidfile pid
  for name in worker gateway storage; do
    for i in "${REPLICAS[@]}"; do
      pidfile="$DIR/$name-$i.pid"
      if running "$pidfile"; then kill -TERM "$(cat "$pidfile")" 2>/dev/null || true; fi
    done
  done
  for pidfile in "$DIR"/*-[12].pid; do
    [[ -f "$pidfile" ]] || continue
    pid="$(cat "$pidfile")"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  done
  if running "$DIR/haproxy.pid"; then kill -TERM "$(cat "$DIR/haproxy.pid")" 2>/dev/null || true; fi
  rm -f "$DIR/haproxy.pid"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) stop ;;
  *) echo "usage: $0 start [storage gateway worker] | stop" >&2; exit 2 ;;
esac
