#!/usr/bin/env bash
# `npm start`: the whole system on its embedded defaults. Installs what is missing (the preview
# converters included), starts Postgres, Redis and the local S3 server, applies migrations, builds, starts gateway, storage and worker,
# prints a dev API key and a curl to try, then follows the logs until Ctrl-C (which stops the services).
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
PORT="${PORT:-8080}"

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

Logs: $UHP_DATA_DIR/logs/{gateway,storage,worker}.log — Ctrl-C stops the services (Postgres, Redis and S3 keep running;
'bash infra/local/down.sh' stops the S3 server).
MSG
tail -n 0 -F "$UHP_DATA_DIR/logs/gateway.log" "$UHP_DATA_DIR/logs/storage.log" "$UHP_DATA_DIR/logs/worker.log" &
wait $!
