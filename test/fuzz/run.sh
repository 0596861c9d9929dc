#!/usr/bin/env bash
# `npm run fuzz`: seeded hostile requests against the three services (test/fuzz/fuzz.test.ts).
#   FUZZ_SEED (default: from the clock; printed), FUZZ_COUNT (default 1500), FUZZ_SECONDS (time bound, default 600),
#   FUZZ_ONLY=i,j (replay those cases of the seeded run).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
[[ -d node_modules/.bin ]] || npm ci --no-audit --no-fund
TEST_DB="uhp_test"; [[ "${UHP_TEST_SLOT:-0}" != 0 ]] && TEST_DB="uhp_test_${UHP_TEST_SLOT}"
UHP_DATABASES="$TEST_DB" bash infra/local/up.sh >/dev/null
[[ "${UHP_SKIP_BUILD:-}" == 1 ]] || npm run --silent build >/dev/null # .ci/run: npm test just built
exec npx vitest run --project fuzz "$@"
