#!/usr/bin/env bash
# `npm test`: every test. Installs what is missing, starts Postgres, Redis and the local S3 server,
# creates and migrates the test database, builds the three services, then runs the unit,
# integration and end-to-end tiers in turn (each tier is a vitest project; see vitest.config.ts).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

[[ -d node_modules/.bin ]] || npm ci --no-audit --no-fund
UHP_DATABASES="uhp_test" bash infra/local/up.sh
npm run --silent build >/dev/null

status=0
for tier in unit integration e2e; do
  echo "── $tier tests ──"
  npx vitest run --project "$tier" || status=1
done
exit $status
