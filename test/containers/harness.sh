#!/usr/bin/env bash
# Hooks into the compose stack of `npm run test:containers` (run.sh brings it up), for tests that
# act on containers: the SIGTERM (graceful drain) tests send a signal to one service container, start
# a second worker, and then look at what is left in Postgres and S3. test/containers/support/stack.ts
# calls these from TypeScript.
#
#   harness.sh env                          KEY=value lines: base URL, API keys, project, compose command
#   harness.sh container SERVICE [N]        id of container N (default 1) of SERVICE
#   harness.sh signal SIGNAL SERVICE [N]    e.g. `signal TERM worker-preview`: what `docker stop` sends
#   harness.sh wait-exit SERVICE [N] [S]    wait up to S seconds (default 90) for it to stop; prints its exit status
#   harness.sh start SERVICE [N]            start a stopped container again and wait until it is healthy
#   harness.sh scale SERVICE COUNT          run COUNT containers of SERVICE (new ones wait to be healthy)
#   harness.sh recreate SERVICE [VAR=VALUE…]   one container of SERVICE, made anew with these variables in
#                                           compose's environment (e.g. WORKER_SHUTDOWN_GRACE_MS=500), healthy
#   harness.sh wait-healthy SERVICE [N]     wait up to 120 s
#   harness.sh running SERVICE              how many containers of SERVICE are running
#   harness.sh sql 'SELECT …'               psql in the postgres container; rows as tab-separated lines
#   harness.sh objects                      every object key in the bucket, one a line (listed by the
#                                           storage container with its own credentials)
#   harness.sh logs SERVICE [N]             the container's log
#   harness.sh compose ARGS…                compose with the stack's project, files and environment
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
# shellcheck source=lib.sh
source "$HERE/lib.sh"

env_value() { sed -n "s/^$1=//p" "$CT_ENV_FILE"; }

cmd="${1:-}"
shift || true
case "$cmd" in
  env)
    keys="$(env_value UHP_API_KEYS)"
    echo "UHP_CT_BASE_URL=$CT_BASE_URL"
    echo "UHP_CT_KEY_A=$(echo "$keys" | cut -d, -f1 | cut -d= -f2)"
    echo "UHP_CT_KEY_B=$(echo "$keys" | cut -d, -f2 | cut -d= -f2)"
    echo "UHP_CT_PROJECT=$CT_PROJECT"
    echo "UHP_CT_COMPOSE=$(compose_cmd)"
    ;;
  container) container_of "$@" ;;
  signal)
    [[ $# -ge 2 ]] || die "usage: harness.sh signal SIGNAL SERVICE [N]"
    "$DOCKER" kill -s "$1" "$(container_of "$2" "${3:-1}")" >/dev/null
    ;;
  wait-exit)
    c="$(container_of "$1" "${2:-1}")"
    timeout "${3:-90}" "$DOCKER" wait "$c" || die "$1 #${2:-1} still runs after ${3:-90} s"
    ;;
  start)
    c="$(container_of "$1" "${2:-1}")"
    "$DOCKER" start "$c" >/dev/null
    wait_healthy 120 "$c" || die "$1 #${2:-1} is not healthy after a restart"
    ;;
  scale)
    [[ $# -eq 2 ]] || die "usage: harness.sh scale SERVICE COUNT"
    compose up -d --no-deps --no-recreate --no-build --scale "$1=$2" "$1" >/dev/null 2>&1 ||
      { compose up -d --no-deps --no-recreate --no-build --scale "$1=$2" "$1"; exit 1; }
    mapfile -t ids < <(containers_of "$1")
    wait_healthy 120 "${ids[@]}" || die "not every container of $1 is healthy"
    ;;
  recreate)
    [[ $# -ge 1 ]] || die "usage: harness.sh recreate SERVICE [VAR=VALUE…]"
    service="$1"
    shift
    (
      for assignment in "$@"; do export "${assignment?}"; done
      compose up -d --no-deps --force-recreate --no-build --scale "$service=1" "$service" >/dev/null 2>&1 ||
        compose up -d --no-deps --force-recreate --no-build --scale "$service=1" "$service"
    ) || die "recreating $service failed"
    wait_healthy 120 "$(container_of "$service")" || die "$service is not healthy after being recreated"
    ;;
  running)
    n=0
    for c in $(containers_of "$1"); do [[ "$("$DOCKER" inspect -f '{{.State.Running}}' "$c")" == true ]] && n=$((n + 1)); done
    echo "$n"
    ;;
  wait-healthy) wait_healthy 120 "$(container_of "$1" "${2:-1}")" || die "$1 #${2:-1} is not healthy" ;;
  sql)
    [[ $# -eq 1 ]] || die "usage: harness.sh sql 'SELECT …'"
    "$DOCKER" exec -i "$(container_of postgres)" sh -c 'psql -X -q -t -A -F "	" -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d "$POSTGRES_DB"' <<<"$1"
    ;;
  objects)
    "$DOCKER" exec "$(container_of storage)" node -e '
      const { S3Client, ListObjectsV2Command } = require("@aws-sdk/client-s3");
      const e = process.env;
      const s3 = new S3Client({ endpoint: e.S3_ENDPOINT, region: e.S3_REGION, forcePathStyle: true,
        credentials: { accessKeyId: e.S3_ACCESS_KEY_ID, secretAccessKey: e.S3_SECRET_ACCESS_KEY } });
      (async () => {
        let token;
        do {
          const page = await s3.send(new ListObjectsV2Command({ Bucket: e.S3_BUCKET, ContinuationToken: token }));
          for (const o of page.Contents ?? []) console.log(o.Key);
          token = page.NextContinuationToken;
        } while (token);
      })().catch((err) => { console.error(err.message); process.exit(1); });'
    ;;
  logs) "$DOCKER" logs "$(container_of "$1" "${2:-1}")" 2>&1 ;;
  compose) compose "$@" ;;
  *) sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; [[ -z "$cmd" || "$cmd" == help ]] || exit 2 ;;
esac
