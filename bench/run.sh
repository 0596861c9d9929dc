#!/usr/bin/env bash
# `npm run bench [-- SIZES]`: the transfer benchmark (gateway vs direct S3 vs bare Node hops). Not part of `npm test`.
# `npm run bench:archive [-- SIZES]` (bash bench/run.sh archive [SIZES]): the archive benchmark
#   (bench/archive.bench.mjs: worker build vs reading every object from S3; default 100MiB,1GiB of 1,000 files).
#   bash bench/run.sh                 # 100MiB and 1GiB (default); prints its section of docs/benchmarks.md
#   bash bench/run.sh --write-docs    # the same, and rewrites that section (likewise npm run bench:… -- --write-docs)
#   BENCH_SIZES=16MiB bash bench/run.sh   # quick run
#   bash bench/run.sh preview         # the preview benchmark (bench/preview.bench.mjs)
#   bash bench/run.sh memory          # RSS of gateway and storage under 100 uploads / 500 downloads at once
#   bash bench/run.sh listing         # a session listing of 100,000 artifacts vs pg reading the same rows
#   bash bench/run.sh uploads         # 2 GiB as 32 x 64 MiB /v1/uploads parts, 8 in flight, vs direct lib-storage
# Idempotent: makes sure Postgres, Redis and S3 run (infra/local/up.sh when something is down), creates and
# migrates the database uhp_bench, builds, then runs bench/transfer.bench.mjs, which starts the three
# services on ports 19080-19082 itself and stops them at the end. BENCH_SKIP_BUILD=1 skips `npm run build`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

DB="${BENCH_DB:-uhp_bench}"
export BENCH_DATABASE_URL="postgresql://postgres@127.0.0.1:5432/$DB"
LOG_DIR="$ROOT/bench/results/logs"
mkdir -p "$LOG_DIR"

log() { printf 'bench: %s\n' "$*" >&2; }
die() { printf 'bench: ERROR: %s\n' "$*" >&2; exit 1; }

[[ -d node_modules/.bin ]] || die "node_modules is missing; run 'npm ci' first"

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
redis_up() { [[ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" == PONG ]]; }
s3_up() { curl -s -m 3 -o /dev/null "${S3_ENDPOINT:-http://127.0.0.1:7480}"; }

if pg_up && redis_up && s3_up; then
  log "Postgres, Redis and S3 already up"
elif [[ -f infra/local/up.sh ]]; then
  log "starting local services (infra/local/up.sh $DB) ..."
  bash infra/local/up.sh "$DB" >/dev/null || log "infra/local/up.sh failed; checking what answers anyway"
else
  log "infra/local/up.sh not found; waiting for Postgres, Redis and S3 to answer"
fi
deadline=$((SECONDS + ${BENCH_WAIT_S:-120}))
until pg_up && redis_up && s3_up; do
  ((SECONDS < deadline)) || die "not up after ${BENCH_WAIT_S:-120}s: $(pg_up || echo -n 'Postgres ')$(redis_up || echo -n 'Redis ')$(s3_up || echo -n 'S3')"
  sleep 1
done

# The bench's own bucket (BENCH_BUCKET, uhp-bench): a fresh machine has only the dev bucket.
if [[ -f infra/local/s3.sh ]]; then
  S3_BUCKET="${BENCH_BUCKET:-uhp-bench}" bash infra/local/s3.sh start >/dev/null 2>&1 ||
    die "could not make sure the bucket ${BENCH_BUCKET:-uhp-bench} exists (infra/local/s3.sh start)"
fi

psql_admin() { psql -h 127.0.0.1 -p 5432 -U postgres -d postgres -v ON_ERROR_STOP=1 -qtAX "$@"; }
if [[ "$(psql_admin -c "select 1 from pg_database where datname = '$DB'")" != 1 ]]; then
  psql_admin -c "create database \"$DB\"" >/dev/null 2>&1 || [[ "$(psql_admin -c "select 1 from pg_database where datname = '$DB'")" == 1 ]] ||
    die "could not create database $DB"
  log "created database $DB"
fi
DATABASE_URL="$BENCH_DATABASE_URL" npx prisma migrate deploy </dev/null >"$LOG_DIR/migrate.log" 2>&1 || {
  tail -n 30 "$LOG_DIR/migrate.log" >&2
  die "prisma migrate deploy failed for $DB"
}

if [[ "${BENCH_SKIP_BUILD:-}" != 1 ]]; then
  log "npm run build ..."
  npm run --silent build >"$LOG_DIR/build.log" 2>&1 || {
    tail -n 40 "$LOG_DIR/build.log" >&2
    die "npm run build failed (log: $LOG_DIR/build.log)"
  }
fi

if [[ "${1:-}" == preview ]]; then
  shift
  bash infra/local/preview-tools.sh >/dev/null
  exec node bench/preview.bench.mjs "$@"
fi
if [[ "${1:-}" == listing ]]; then
  shift
  exec node bench/listing.bench.mjs "$@"
fi
if [[ "${1:-}" == memory ]]; then
  shift
  exec node bench/memory.bench.mjs "$@"
fi
if [[ "${1:-}" == uploads ]]; then
  shift
  exec node bench/uploads.bench.mjs "$@"
fi
if [[ "${1:-}" == archive ]]; then
  shift
  exec node bench/archive.bench.mjs "$@"
fi
exec node bench/transfer.bench.mjs "$@"
