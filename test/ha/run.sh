#!/usr/bin/env bash
# `npm run test:ha`: the end-to-end tier on the highly available topology, every file once:
#   1. replicas   every file but those below, with UHP_E2E_TOPOLOGY=ha: two gateways, two storage services
#                 and two workers behind a round-robin HAProxy, every service's Postgres through a private
#                 PgBouncer in transaction pooling (DATABASE_DIRECT_URL stays direct);
#   2. pgbouncer  the files that act on one process (below), with UHP_E2E_TOPOLOGY=pgbouncer: one of each
#                 service, through the same PgBouncer.
# So the whole tier runs behind PgBouncer, and all of it that can runs with replicas, in about the time of
# one e2e tier. The shared stack, and each stack a file starts, follow the topology (test/support/env.ts).
# One file on one topology, for working on it (after a build):
#   UHP_E2E_TOPOLOGY=ha npx vitest run --project e2e test/e2e/uploads.test.ts
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

# Each of these stops, kills, freezes or restarts one process of a service, or reads its memory: with two
# of each behind a balancer there is no "the" gateway or storage service (Stack refuses those methods).
ONE_PROCESS=(
  test/e2e/graceful-drain.test.ts # SIGTERM to the gateway and the worker, and their drain
  test/e2e/hostile-tenants.test.ts # SIGKILL to the storage service, its memory, a gateway restarted on new keys
  test/e2e/lost-jobs.test.ts       # the worker stopped (SIGTERM) while jobs are taken out of Redis
  test/e2e/upload-faults.test.ts   # SIGKILL to the storage service in the middle of uploads
  # Their own Redis topologies; the per-principal upload limit they check is per gateway process.
  test/e2e/redis-cluster.test.ts
  test/e2e/redis-sentinel.test.ts
)

[[ -d node_modules/.bin ]] || npm ci --no-audit --no-fund
bash test/ha/tools.sh
bash infra/local/preview-tools.sh >/dev/null
TEST_DB="uhp_test"; [[ "${UHP_TEST_SLOT:-0}" != 0 ]] && TEST_DB="uhp_test_${UHP_TEST_SLOT}"
UHP_DATABASES="$TEST_DB" bash infra/local/up.sh >/dev/null # migrations run here, on a direct connection
[[ "${UHP_SKIP_BUILD:-}" == 1 ]] || npm run --silent build >/dev/null # .ci/run: npm test just built

status=0
excluded=()
for file in "${ONE_PROCESS[@]}"; do excluded+=(--exclude "$file"); done
echo "── e2e, replicas behind HAProxy, Postgres through PgBouncer (UHP_E2E_TOPOLOGY=ha) ──"
UHP_E2E_TOPOLOGY=ha npx vitest run --project e2e "${excluded[@]}" || status=1
echo "── e2e files that act on one process, through PgBouncer (UHP_E2E_TOPOLOGY=pgbouncer) ──"
UHP_E2E_TOPOLOGY=pgbouncer npx vitest run --project e2e "${ONE_PROCESS[@]}" || status=1
exit $status
