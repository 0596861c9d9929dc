#!/usr/bin/env bash
# `npm start`: the whole system on its embedded defaults. Installs what is missing (the preview
# converters included), starts Postgres, Redis and the local S3 server, applies migrations, builds, writes the
# stack's settings to $UHP_DATA_DIR/local.env (for the operator CLIs), starts gateway, storage and worker, prints
# a dev API key and a curl to try, then follows the logs until Ctrl-C (which stops the services).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
export UHP_DATA_DIR="${UHP_DATA_DIR:-$ROOT/.data}"
mkdir -p "$UHP_DATA_DIR"

[[ -d node_modules/.bin ]] || npm ci --no-audit --no-fund
bash infra/local/up.sh
bash infra/local/preview-tools.sh   # LibreOffice, Chromium and fonts for PDF previews (apt, only what is missing)
npm run --silent build >/dev/null

KEY_FILE="$UHP_DATA_DIR/dev-api-key"
if [[ ! -s "$KEY_FILE" ]]; then
  node -e "process.stdout.write('sk_dev_' + require('crypto').randomBytes(24).toString('base64url'))" > "$KEY_FILE"
  chmod 600 "$KEY_FILE"
fi
DEV_KEY="$(cat "$KEY_FILE")"
export UHP_API_KEYS="${UHP_API_KEYS:-dev=$DEV_KEY}"

# A storage token of this data folder rather than the fixed development value, made once like the API key.
TOKEN_FILE="$UHP_DATA_DIR/storage-token"
if [[ -z "${STORAGE_TOKEN:-}" && ! -s "$TOKEN_FILE" ]]; then
  node -e "process.stdout.write(require('crypto').randomBytes(32).toString('base64url'))" > "$TOKEN_FILE"
  chmod 600 "$TOKEN_FILE"
fi
export STORAGE_TOKEN="${STORAGE_TOKEN:-$(cat "$TOKEN_FILE")}"

# The settings of this stack, exported to the services and written to $UHP_DATA_DIR/local.env, where the
# operator CLIs (`npm run doctor`, `npm run keys`) find them: the local S3 keys exist nowhere else. Each keeps a
# value given in the environment; the defaults are up.sh's and s3.sh's.
export PORT="${PORT:-8080}" STORAGE_PORT="${STORAGE_PORT:-8081}" WORKER_PORT="${WORKER_PORT:-8082}"
export STORAGE_URL="${STORAGE_URL:-http://127.0.0.1:$STORAGE_PORT}"
export DATABASE_URL="${DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/uhp}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
export S3_ENDPOINT="${S3_ENDPOINT:-http://127.0.0.1:${S3_PORT:-7480}}" S3_REGION="${S3_REGION:-us-east-1}"
export S3_FORCE_PATH_STYLE="${S3_FORCE_PATH_STYLE:-true}" S3_BUCKET="${S3_BUCKET:-uhp-files}"
export S3_ACCESS_KEY_ID="${S3_ACCESS_KEY_ID:-uhp-dev-access}"
export S3_SECRET_ACCESS_KEY="${S3_SECRET_ACCESS_KEY:-uhp-dev-secret-key-0123456789}"
LOCAL_ENV="$UHP_DATA_DIR/local.env"
(
  umask 077
  {
    echo "# Written by infra/local/start.sh on each start: the local stack's settings, for npm run doctor / keys."
    echo "# A variable set in the environment wins over its line here."
    for name in DATABASE_URL REDIS_URL S3_ENDPOINT S3_REGION S3_FORCE_PATH_STYLE S3_BUCKET S3_ACCESS_KEY_ID \
      S3_SECRET_ACCESS_KEY STORAGE_URL STORAGE_TOKEN PORT STORAGE_PORT WORKER_PORT; do
      echo "$name=${!name}"
    done
  } >"$LOCAL_ENV.tmp"
  mv "$LOCAL_ENV.tmp" "$LOCAL_ENV"
)

bash infra/local/services.sh stop >/dev/null 2>&1 || true
bash infra/local/services.sh start
trap 'echo; bash infra/local/services.sh stop; exit 0' INT TERM

cat <<MSG

uhp-files is up: gateway http://127.0.0.1:$PORT  (docs: http://127.0.0.1:$PORT/docs)
Dev API key (principal "dev"): $DEV_KEY

Try it:
  echo 'hello, artifacts' > /tmp/hello.txt
  curl -s -H "Authorization: Bearer $DEV_KEY" -F file=@/tmp/hello.txt http://127.0.0.1:$PORT/v1/files
  curl -s -H "Authorization: Bearer $DEV_KEY" http://127.0.0.1:$PORT/v1/files

Operators: npm run doctor, npm run keys -- list (they read $LOCAL_ENV)
Logs: $UHP_DATA_DIR/logs/{gateway,storage,worker}.log — Ctrl-C stops the services (Postgres, Redis and S3 keep running;
'bash infra/local/down.sh' stops the S3 server).
MSG
tail -n 0 -F "$UHP_DATA_DIR/logs/gateway.log" "$UHP_DATA_DIR/logs/storage.log" "$UHP_DATA_DIR/logs/worker.log" &
wait $!
