# Shared by the scripts of test/containers (sourced, not run).
# shellcheck shell=bash

# Debian's client (20.10, BuildKit built in). /usr/local/bin/docker may come first on PATH without buildx,
# and then `RUN --mount=…` builds fail; use the one from the docker.io package explicitly.
DOCKER="${UHP_DOCKER:-/usr/bin/docker}"
COMPOSE_BIN="${UHP_COMPOSE:-docker-compose}"

# The base image the Dockerfile names by default, e.g. node:24.22.3-bookworm-slim; its stand-in carries
# the same tag under uhp-standin/.
NODE_IMAGE_DEFAULT="$(sed -n 's/^ARG NODE_IMAGE=//p' "$ROOT/infra/docker/Dockerfile" | head -n 1)"
NODE_TAG="${NODE_IMAGE_DEFAULT#node:}"
NODE_VERSION="${NODE_TAG%%-*}"
NPM_VERSION="${UHP_STANDIN_NPM_VERSION:-11.19.1}"

STANDIN_DEBIAN=uhp-standin/debian:bookworm-slim
STANDIN_NODE="uhp-standin/node:$NODE_TAG"
STANDIN_POSTGRES=uhp-standin/postgres:15
STANDIN_REDIS=uhp-standin/redis:7
STANDIN_S3=uhp-standin/s3:ceph

log() { printf '[containers] %s\n' "$*" >&2; }
die() { printf '[containers] ERROR: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------------
# The compose stack of the test tier: docker-compose.yml as users run it, plus the test-only override
# that swaps in the stand-ins (unless UHP_CONTAINERS_REAL_IMAGES=1, for machines that reach the
# registries), with the test environment (throwaway secrets, the conformance settings).
CT_DIR="$ROOT/test/containers"
CT_PROJECT="${UHP_CT_PROJECT:-uhpct}"
CT_ENV_FILE="$CT_DIR/test.env"
CT_PORT="$(sed -n 's/^UHP_GATEWAY_PORT=//p' "$CT_ENV_FILE")"
CT_BASE_URL="http://127.0.0.1:$CT_PORT"
CT_DATA="$ROOT/.data/containers"
APP_IMAGES=(gateway storage worker migrate)

# Compose lets the caller's environment win over --env-file: a variable the compose files read, left
# exported by whoever runs the tier (.ci/run exports UHP_PUBLIC_BASE_URL, STORAGE_TOKEN… for its own
# stack), would change the stack under test. Only test.env, and what a test passes on purpose
# (harness.sh recreate SERVICE VAR=VALUE), may set them.
while read -r variable; do unset "$variable"; done < <(
  grep -ohE '\$\{[A-Z_][A-Z0-9_]*' "$ROOT/docker-compose.yml" "$CT_DIR/compose.standins.yml" | cut -c3- | sort -u
)

compose_cmd() { # the Compose v2 plugin when there is one, else docker-compose (1.29 from Debian)
  if "$DOCKER" compose version >/dev/null 2>&1; then echo "$DOCKER compose"
  elif command -v docker-compose >/dev/null 2>&1; then echo docker-compose
  else return 1; fi
}

compose() {
  local files=(-f "$ROOT/docker-compose.yml")
  [[ "${UHP_CONTAINERS_REAL_IMAGES:-}" == 1 ]] || files+=(-f "$CT_DIR/compose.standins.yml")
  # shellcheck disable=SC2046
  $(compose_cmd) -p "$CT_PROJECT" --project-directory "$ROOT" "${files[@]}" --env-file "$CT_ENV_FILE" "$@"
}

container_of() { # container_of SERVICE [INDEX] -> the container id (any state)
  local id
  id="$("$DOCKER" ps -aq --filter "label=com.docker.compose.project=$CT_PROJECT" --filter "label=com.docker.compose.service=$1" \
    --filter "label=com.docker.compose.container-number=${2:-1}")"
  [[ -n "$id" ]] || die "no container for service $1 #${2:-1} in project $CT_PROJECT"
  echo "$id"
}

containers_of() { # containers_of SERVICE -> ids of every container of the service, running or not
  "$DOCKER" ps -aq --filter "label=com.docker.compose.project=$CT_PROJECT" --filter "label=com.docker.compose.service=$1"
}

health_of() { "$DOCKER" inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' "$1" 2>/dev/null; }

wait_healthy() { # wait_healthy SECONDS CONTAINER...
  local deadline=$((SECONDS + $1)) c h; shift
  for c in "$@"; do
    while h="$(health_of "$c")"; [[ "$h" != healthy ]]; do
      [[ "$h" == unhealthy || "$h" == exited || "$h" == dead ]] && return 1
      ((SECONDS < deadline)) || return 1
      sleep 1
    done
  done
}
