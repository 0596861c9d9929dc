#!/usr/bin/env bash
# One idempotent entry point for the local services the project needs:
#   PostgreSQL (127.0.0.1:5432, user postgres, trust auth), Redis (127.0.0.1:6379),
#   S3 (Ceph radosgw via infra/local/s3.sh), the databases, and Prisma migrations.
#
#   infra/local/up.sh [db ...]      # databases default to $UHP_DATABASES or "uhp"
#
# Safe to run again at any time: whatever is already there is left alone, except that
# UHP_FRESH_DATABASES=1 drops the named databases first (the test run starts from empty tables).
# See infra/local/README.md.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"

PG_HOST=127.0.0.1
PG_PORT=5432
REDIS_HOST=127.0.0.1
REDIS_PORT=6379
WAIT_SECS="${UHP_WAIT_SECS:-60}"

if (($# > 0)); then
  DATABASES=("$@")
else
  # "a,b" or "a b"
  IFS=', ' read -r -a DATABASES <<<"${UHP_DATABASES:-uhp}"
fi

log() { printf '[up] %s\n' "$*" >&2; }
die() { printf '[up] ERROR: %s\n' "$*" >&2; exit 1; }
show_log() {
  local f="$1" n="${2:-30}"
  [[ -r "$f" ]] || return 0
  printf '[up] ---- last %s lines of %s ----\n' "$n" "$f" >&2
  tail -n "$n" "$f" >&2 || true
  printf '[up] ----\n' >&2
}

wait_for() { # wait_for SECONDS CMD...
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.3
  done
}

apt_install() { # apt_install PKG...
  local cmd="apt-get update && apt-get install -y --no-install-recommends $*"
  [[ "${UHP_NO_INSTALL:-}" != 1 ]] || die "missing: $*. Install with:  $cmd"
  [[ $(id -u) == 0 ]] || die "missing: $* and not root. Install with:  sudo sh -c '$cmd'"
  log "installing $* (apt-get) ..."
  local aptlog="/tmp/uhp-apt.$$.log"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends "$@" >"$aptlog" 2>&1; then
    apt-get update >>"$aptlog" 2>&1 || true
    apt-get install -y --no-install-recommends "$@" >>"$aptlog" 2>&1 || { show_log "$aptlog"; die "apt-get install $* failed"; }
  fi
  rm -f "$aptlog"
}

# ------------------------------------------------------------ PostgreSQL ---
pg_ready() { pg_isready -h "$PG_HOST" -p "$PG_PORT" -q; }
psql_admin() { psql -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 -qtAX "$@"; }

pg_version() { ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1; }

# A fresh Debian cluster wants passwords over TCP; the project uses trust on
# loopback (dev/CI only). Only done right after we installed PostgreSQL ourselves.
pg_trust_loopback() {
  local ver="$1" hba
  hba="/etc/postgresql/$ver/main/pg_hba.conf"
  [[ -f "$hba" ]] || return 0
  grep -q '^# uhp: trust on loopback' "$hba" && return 0
  log "configuring trust auth on loopback in $hba"
  local tmp
  tmp="$(mktemp)"
  {
    echo '# uhp: trust on loopback (dev/CI), added by infra/local/up.sh'
    echo 'host    all             all             127.0.0.1/32            trust'
    echo 'host    all             all             ::1/128                 trust'
    cat "$hba"
  } >"$tmp"
  cat "$tmp" >"$hba"
  rm -f "$tmp"
}

ensure_postgres() {
  local installed_now=0 ver
  if ! command -v psql >/dev/null 2>&1 || [[ -z "$(pg_version)" ]]; then
    apt_install postgresql
    installed_now=1
  fi
  ver="$(pg_version)"
  [[ -n "$ver" ]] || die "PostgreSQL is installed but /etc/postgresql has no cluster (create one: pg_createcluster <version> main)"
  ((installed_now)) && pg_trust_loopback "$ver"
  if ! pg_ready; then
    log "starting PostgreSQL $ver (cluster main)"
    pg_ctlcluster --skip-systemctl-redirect "$ver" main start </dev/null >/dev/null 2>&1 ||
      pg_ctlcluster --skip-systemctl-redirect "$ver" main status >/dev/null 2>&1 || {
        show_log "/var/log/postgresql/postgresql-$ver-main.log"
        die "pg_ctlcluster $ver main start failed"
      }
    if ((installed_now)); then pg_ctlcluster --skip-systemctl-redirect "$ver" main reload >/dev/null 2>&1 || true; fi
    wait_for "$WAIT_SECS" pg_ready || {
      show_log "/var/log/postgresql/postgresql-$ver-main.log"
      die "PostgreSQL did not accept connections on $PG_HOST:$PG_PORT within ${WAIT_SECS}s"
    }
  elif ((installed_now)); then
    pg_ctlcluster --skip-systemctl-redirect "$ver" main reload >/dev/null 2>&1 || true
  fi
  local err
  err="$(psql_admin -c 'select 1' 2>&1 >/dev/null)" ||
    die "cannot connect as postgres@$PG_HOST:$PG_PORT without a password: $err
    (the project expects 'trust' for host 127.0.0.1/32 and ::1/128 in /etc/postgresql/$ver/main/pg_hba.conf)"
}

ensure_databases() {
  local db exists out
  for db in "${DATABASES[@]}"; do
    [[ "$db" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "bad database name '$db' (letters, digits, _ only)"
    if [[ "${UHP_FRESH_DATABASES:-}" == 1 ]]; then
      psql_admin -c "drop database if exists \"$db\" with (force)" >/dev/null || die "drop database $db failed"
      log "dropped database $db (UHP_FRESH_DATABASES=1)"
    fi
    exists="$(psql_admin -c "select 1 from pg_database where datname = '$db'")"
    if [[ "$exists" != 1 ]]; then
      if out="$(psql_admin -c "create database \"$db\"" 2>&1)"; then
        log "created database $db"
      elif [[ "$(psql_admin -c "select 1 from pg_database where datname = '$db'")" != 1 ]]; then
        die "create database $db failed: $out"
      fi # else: created concurrently by someone else
    fi
  done
}

# ----------------------------------------------------------------- Redis ---
redis_ready() { [[ "$(redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" ping 2>/dev/null)" == PONG ]]; }

ensure_redis() {
  if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
    apt_install redis-server
  fi
  redis_ready && return 0
  log "starting Redis on $REDIS_HOST:$REDIS_PORT"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log </dev/null >/dev/null 2>&1 || {
    show_log /var/log/redis/ci.log
    die "redis-server failed to start"
  }
  wait_for "$WAIT_SECS" redis_ready || {
    show_log /var/log/redis/ci.log
    die "Redis did not answer PING on $REDIS_HOST:$REDIS_PORT within ${WAIT_SECS}s"
  }
}

# ---------------------------------------------------------------- Prisma ---
migrate() {
  [[ "${UHP_SKIP_MIGRATE:-}" == 1 ]] && { log "UHP_SKIP_MIGRATE=1: migrations skipped"; return 0; }
  if [[ ! -x "$REPO_ROOT/node_modules/.bin/prisma" ]]; then
    log "node_modules/.bin/prisma not found: migrations skipped (run npm ci first)"
    return 0
  fi
  # one process per database, in parallel (each spends most of its time idle)
  local db i rc=0 pids=() outs=()
  for db in "${DATABASES[@]}"; do
    local out
    out="$(mktemp "/tmp/uhp-migrate-$db.XXXXXX")"
    outs+=("$out")
    (cd "$REPO_ROOT" && DATABASE_URL="postgresql://postgres@$PG_HOST:$PG_PORT/$db" \
      exec npx prisma migrate deploy </dev/null >"$out" 2>&1) &
    pids+=($!)
  done
  for i in "${!DATABASES[@]}"; do
    if wait "${pids[$i]}"; then
      log "prisma migrate deploy -> ${DATABASES[$i]}: $(grep -E 'migrations? (have been|has been)|No pending|applied' "${outs[$i]}" | tail -n 1)"
    else
      rc=1
      log "prisma migrate deploy FAILED for database ${DATABASES[$i]}:"
      sed 's/^/    /' "${outs[$i]}" >&2
    fi
    rm -f "${outs[$i]}"
  done
  ((rc == 0)) || die "prisma migrate deploy failed"
}

# ------------------------------------------------------------- the tour ---
# The README's curl tour reads answers with jq: installed here so that the tour works as written after
# `npm start`, and so that `npm test`, which runs it (test/e2e/doc-snippets.test.ts), finds it too.
ensure_tour_tools() { command -v jq >/dev/null 2>&1 || apt_install jq; }

# ------------------------------------------------------------------ main ---
t0=$SECONDS
ensure_tour_tools
ensure_postgres
ensure_databases
ensure_redis
"$SCRIPT_DIR/s3.sh" start
migrate

S3_PORT="${S3_PORT:-7480}"
cat <<EOF
# local services ready in $((SECONDS - t0)) s
$(for db in "${DATABASES[@]}"; do echo "DATABASE_URL=postgresql://postgres@$PG_HOST:$PG_PORT/$db"; done)
REDIS_URL=redis://$REDIS_HOST:$REDIS_PORT
S3_ENDPOINT=http://127.0.0.1:$S3_PORT
S3_REGION=us-east-1
S3_FORCE_PATH_STYLE=true
S3_ACCESS_KEY_ID=${S3_ACCESS_KEY_ID:-uhp-dev-access}
S3_SECRET_ACCESS_KEY=${S3_SECRET_ACCESS_KEY:-uhp-dev-secret-key-0123456789}
S3_BUCKET=${S3_BUCKET:-uhp-files}
EOF
