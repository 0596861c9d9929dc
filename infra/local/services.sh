#!/usr/bin/env bash
# Starts or stops the three built services (gateway, storage, worker) in the background on this machine.
#   infra/local/services.sh start   # needs `npm run build` first; waits until every /readyz answers
#   infra/local/services.sh stop
#   infra/local/services.sh status
# Configuration comes from the environment (see docs/operations.md); logs go to $UHP_DATA_DIR/logs.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DATA_DIR="${UHP_DATA_DIR:-$ROOT/.data}"
RUN_DIR="$DATA_DIR/run"
LOG_DIR="$DATA_DIR/logs"
mkdir -p "$RUN_DIR" "$LOG_DIR"

PORT="${PORT:-8080}"
STORAGE_PORT="${STORAGE_PORT:-8081}"
WORKER_PORT="${WORKER_PORT:-8082}"
export PORT STORAGE_PORT WORKER_PORT
export STORAGE_URL="${STORAGE_URL:-http://127.0.0.1:$STORAGE_PORT}"
# The local S3 server's keys (infra/local/s3.sh creates that user). The storage service has no default
# keys of its own: without them it would use the AWS SDK's default credential chain.
export S3_ACCESS_KEY_ID="${S3_ACCESS_KEY_ID:-uhp-dev-access}"
export S3_SECRET_ACCESS_KEY="${S3_SECRET_ACCESS_KEY:-uhp-dev-secret-key-0123456789}"

declare -A PORT_OF=([storage]="$STORAGE_PORT" [gateway]="$PORT" [worker]="$WORKER_PORT")
ORDER=(storage gateway worker)

running() { local pidfile="$RUN_DIR/$1.pid"; [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

wait_ready() {
  local name="$1" port="$2" deadline=$((SECONDS + ${UHP_START_TIMEOUT_S:-60}))
  until curl -fsS -m 2 "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
    if ! running "$name"; then
      echo "services: $name exited during start; last lines of $LOG_DIR/$name.log:" >&2
      tail -n 30 "$LOG_DIR/$name.log" >&2 || true
      return 1
    fi
    if (( SECONDS > deadline )); then
      echo "services: $name is not ready on port $port after ${UHP_START_TIMEOUT_S:-60}s; last lines of $LOG_DIR/$name.log:" >&2
      tail -n 30 "$LOG_DIR/$name.log" >&2 || true
      curl -sS -m 2 "http://127.0.0.1:$port/readyz" >&2 || true
      return 1
    fi
    sleep 0.3
  done
}

# As in the images: glibc keeps up to 32 MiB of freed heap rather than faulting it in again after each GC.
export GLIBC_TUNABLES="${GLIBC_TUNABLES:-glibc.malloc.trim_threshold=33554432:glibc.malloc.mmap_threshold=4194304:glibc.malloc.arena_max=2}"

start() {
  [[ -f "$ROOT/dist/apps/gateway/src/main.js" ]] || { echo "services: not built; run 'npm run build' first" >&2; exit 1; }
  for name in "${ORDER[@]}"; do
    if running "$name"; then echo "services: $name already running (pid $(cat "$RUN_DIR/$name.pid"))"; continue; fi
    (cd "$ROOT" && exec setsid node --enable-source-maps "dist/apps/$name/src/main.js" >>"$LOG_DIR/$name.log" 2>&1 < /dev/null) &
    echo $! > "$RUN_DIR/$name.pid"
    wait_ready "$name" "${PORT_OF[$name]}"
    echo "services: $name ready on 127.0.0.1:${PORT_OF[$name]} (pid $(cat "$RUN_DIR/$name.pid"), log $LOG_DIR/$name.log)"
  done
}

stop() {
  for name in worker gateway storage; do
    local pidfile="$RUN_DIR/$name.pid"
    if running "$name"; then
      local pid; pid="$(cat "$pidfile")"
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -KILL "$pid" 2>/dev/null || true
      echo "services: $name stopped"
    fi
    rm -f "$pidfile"
  done
}

status() {
  for name in "${ORDER[@]}"; do
    if running "$name"; then echo "$name: running (pid $(cat "$RUN_DIR/$name.pid"), port ${PORT_OF[$name]})"; else echo "$name: stopped"; fi
  done
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
