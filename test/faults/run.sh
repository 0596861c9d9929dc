#!/usr/bin/env bash
# `npm run test:faults`: the fault tier (test/faults/faults.test.ts). Needs the PostgreSQL server binaries
# (initdb, pg_ctl) and redis-server for its private instances, the shared S3 server (for its bucket) and the
# shared Postgres (for nothing but the up.sh checks), the preview converters, and a build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

[[ -d node_modules/.bin ]] || npm ci --no-audit --no-fund
missing=()
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
if ((${#missing[@]})); then
  [[ $(id -u) == 0 ]] || { echo "missing: ${missing[*]} (apt-get install ${missing[*]})" >&2; exit 1; }
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
bash infra/local/preview-tools.sh >/dev/null
bash infra/local/up.sh >/dev/null # the shared S3 server, where the tier's bucket lives
[[ "${UHP_SKIP_BUILD:-}" == 1 ]] || npm run --silent build >/dev/null # .ci/run: npm test just built
exec npx vitest run --project faults "$@"
