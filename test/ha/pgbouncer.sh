#!/usr/bin/env bash
# A private PgBouncer (Debian's `pgbouncer`) in front of the local Postgres (127.0.0.1:5432, trust), as a
# platform team runs it before hundreds of pods: transaction pooling, a small server pool per database, so
# many client connections share few server ones. Every database name is forwarded (the `*` entry), so
# tests that make a database of their own go through it too. Not the system service: its own ini, log and
# pid in a folder of its own, on a loopback port.
#
#   test/ha/pgbouncer.sh start|stop|status     # port: UHP_PGBOUNCER_PORT (required)
#
# PgBouncer refuses to run as root: as root it runs as `postgres`. Its folder is printed by `start`.
set -euo pipefail
PORT="${UHP_PGBOUNCER_PORT:?UHP_PGBOUNCER_PORT: the loopback port PgBouncer listens on}"
DIR="${TMPDIR:-/tmp}/uhp-pgbouncer-$PORT"
INI="$DIR/pgbouncer.ini" PIDFILE="$DIR/pgbouncer.pid" LOG="$DIR/pgbouncer.log"
# Server connections per database and user: small on purpose, so that a query needing a session of its
# own (a lock held across transactions, a prepared statement) meets another client's server connection.
POOL_SIZE="${UHP_PGBOUNCER_POOL_SIZE:-4}"
# The server-side bound of a statement: a service with DATABASE_DIRECT_URL sends no `statement_timeout`
# startup parameter (PgBouncer refuses unknown ones), so PgBouncer's query_timeout (seconds) stands for it,
# as DATABASE_STATEMENT_TIMEOUT_MS does. Clients that still send one are refused, as a real pooler would.
QUERY_TIMEOUT_S="${UHP_PGBOUNCER_QUERY_TIMEOUT_S:-30}"

as_owner() { if (($(id -u) == 0)); then runuser -u postgres -- "$@"; else "$@"; fi; }
running() { [[ -f "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

stop() {
  if running; then
    local pid; pid="$(cat "$PIDFILE")"
    kill -INT "$pid" 2>/dev/null || true # a safe shutdown: waits for the transactions in flight
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$PIDFILE"
}

start() {
  bash "$(dirname "${BASH_SOURCE[0]}")/tools.sh"
  stop # one left by an interrupted run of this port
  mkdir -p "$DIR"
  printf '"postgres" ""\n' >"$DIR/userlist.txt"
  cat >"$INI" <<EOF
[databases]
* = host=127.0.0.1 port=5432

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PORT
unix_socket_dir =
auth_type = trust
auth_file = $DIR/userlist.txt
admin_users = postgres
pool_mode = transaction
default_pool_size = $POOL_SIZE
reserve_pool_size = 0
max_client_conn = 2000
query_timeout = $QUERY_TIMEOUT_S
logfile = $LOG
pidfile = $PIDFILE
EOF
  if (($(id -u) == 0)); then chown -R postgres "$DIR"; fi
  as_owner pgbouncer -d "$INI"
  local deadline=$((SECONDS + 15))
  until pg_isready -q -h 127.0.0.1 -p "$PORT" -d postgres; do
    if ((SECONDS > deadline)); then
      echo "pgbouncer: not answering on 127.0.0.1:$PORT; last lines of $LOG:" >&2
      tail -n 20 "$LOG" >&2 || true
      exit 1
    fi
    sleep 0.2
  done
  echo "pgbouncer: 127.0.0.1:$PORT (transaction pooling, $POOL_SIZE server connections per database; $DIR)"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if running; then echo "pgbouncer: running on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"; else echo "pgbouncer: stopped"; exit 1; fi ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
