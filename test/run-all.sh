#!/usr/bin/env bash
# `npm test`: every test. Installs what is missing, starts Postgres, Redis and the local S3 server,
# creates and migrates the test database, builds the three services, then runs lint, the typecheck and
# the unit, chart (the Helm chart under a real helm), integration and end-to-end tiers in turn (each tier
# is a vitest project; see vitest.config.ts) and ends with one summary line over all of them.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

[[ -d node_modules/.bin ]] || npm ci --no-audit --no-fund
bash infra/local/preview-tools.sh >/dev/null  # LibreOffice, Chromium, qpdf for the preview converters
bash test/ha/tools.sh # PgBouncer and HAProxy: the e2e tier runs on them with UHP_E2E_TOPOLOGY (test/support/env.ts)
# UHP_TEST_SLOT=n gives this run its own database, bucket, Redis db and ports (test/support/env.ts).
TEST_DB="uhp_test"; [[ "${UHP_TEST_SLOT:-0}" != 0 ]] && TEST_DB="uhp_test_${UHP_TEST_SLOT}"
# A fresh test database: rows left by an earlier run (on another bucket) cannot meet this run's tests.
UHP_FRESH_DATABASES=1 UHP_DATABASES="$TEST_DB" bash infra/local/up.sh >/dev/null
npm run --silent build >/dev/null

RESULTS="$ROOT/.data/test-results"
rm -rf "$RESULTS" && mkdir -p "$RESULTS"
status=0
echo "── lint (eslint: rules and the import walls; prettier) ──"
if npm run --silent lint; then echo "lint: clean"; else echo "lint: FAILED"; status=1; fi
echo "── typecheck (tsc --noEmit over apps, libs, test, bench and every spec) ──"
if npm run --silent typecheck; then echo "typecheck: clean"; else echo "typecheck: FAILED"; status=1; fi
for tier in unit chart integration e2e; do
  echo "── $tier tests ──"
  npx vitest run --project "$tier" --reporter=default --reporter=json --outputFile="$RESULTS/$tier.json" || status=1
done
node -e '
  const fs = require("fs");
  let passed = 0, failed = 0, skipped = 0;
  for (const tier of ["unit", "chart", "integration", "e2e"]) {
    const file = `${process.argv[1]}/${tier}.json`;
    if (!fs.existsSync(file)) { failed++; console.error(`${tier}: no results (the run crashed)`); continue; }
    const r = JSON.parse(fs.readFileSync(file, "utf8"));
    passed += r.numPassedTests; failed += r.numFailedTests; skipped += r.numPendingTests + r.numTodoTests;
    if (!r.success && r.numFailedTests === 0) { failed++; console.error(`${tier}: errors outside tests`); }
  }
  console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
  if (failed > 0) process.exitCode = 1;
' "$RESULTS" || status=1
exit $status
