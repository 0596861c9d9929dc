#!/usr/bin/env bash
# `npm run test:containers`: the images and docker-compose.yml, proven on this machine.
#
#   1. engine        Docker from Debian (docker.io, docker-compose, debootstrap) if missing; dockerd
#                    started in the background if none answers (--iptables=false --ip-masq=false
#                    --bridge=none: no host networking side effects), logs in .data/containers/dockerd.log
#   2. stand-ins     the images no registry here serves (standins.sh; built once, then reused)
#   3. build         the four images of infra/docker/Dockerfile, tagged as docker-compose.yml names them
#   4. image checks  user, init, no npm / dev dependencies / prisma CLI / TypeScript, no converter
#                    drivers in gateway and storage (nor any require of them in their code), sizes;
#                    HOME and every place the services write usable by an arbitrary uid in group 0
#   5. compose up    docker-compose.yml + compose.standins.yml (test-only) with test.env; waits until
#                    every service is healthy; only the gateway is published
#   6. conformance   the public conformance suite, every section, previews on, against the gateway
#   7. container tests   test/containers/**/*.test.ts (harness hooks; the SIGTERM drain tests go here;
#                    chart-deployments.test.ts runs the Helm chart's rendered pods beside the stack;
#                    arbitrary-uid.test.ts each image as OpenShift's restricted SCC runs it)
#   8. teardown      compose down -v (also on failure, after the logs of the app services); dockerd
#                    stopped again if this run started it (UHP_CONTAINERS_KEEP_ENGINE=1 keeps it)
#
# Prints the time of each phase at the end. Needs root (apt-get, dockerd) unless Docker already runs.
# UHP_CONTAINERS_REAL_IMAGES=1: use the real base and third-party images (a machine that reaches the
# registries) instead of the stand-ins.
# UHP_CONTAINERS_TESTS='arbitrary-uid graceful': only the container test files whose path contains one of
# these words (vitest's file filters), and no conformance run; for working on a test, never for CI.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
cd "$ROOT"
# shellcheck source=lib.sh
source "$HERE/lib.sh"
export DEBIAN_FRONTEND=noninteractive
mkdir -p "$CT_DATA"

# ------------------------------------------------------------------------------------ timings ---
PHASES=() TIMES=() PHASE="" PHASE_T0=0 RUN_T0=$SECONDS
phase() { # phase NAME: ends the current phase, starts the next
  end_phase
  PHASE="$1" PHASE_T0=$SECONDS
  printf '\n=== %s ===\n' "$PHASE"
}
end_phase() {
  [[ -n "$PHASE" ]] || return 0
  PHASES+=("$PHASE") TIMES+=($((SECONDS - PHASE_T0)))
  PHASE=""
}
print_timings() {
  local i
  printf '\n=== timings ===\n'
  for i in "${!PHASES[@]}"; do printf '  %-18s %4d s\n' "${PHASES[$i]}" "${TIMES[$i]}"; done
  printf '  %-18s %4d s\n' total $((SECONDS - RUN_T0))
}

# ----------------------------------------------------------------------------------- teardown ---
STARTED_DOCKERD=""
STACK_UP=0
STATUS=1
finish() {
  STATUS=$?
  trap - EXIT INT TERM
  local failed_phase="$PHASE"
  end_phase
  phase teardown
  if ((STACK_UP)); then
    if ((STATUS != 0)); then
      echo "failed in phase '$failed_phase'; the stack:" >&2
      compose ps >&2 || true
      for service in migrate storage gateway worker-preview worker-archive worker-purge; do
        echo "--- last log lines of $service ---" >&2
        compose logs --no-color --tail 30 "$service" >&2 2>/dev/null || true
      done
    fi
    # Containers the tests attached to the stack's networks (chart-deployments, arbitrary-uid), if one died early.
    "$DOCKER" ps -aq --filter label=uhp-files.test | xargs -r "$DOCKER" rm -f >/dev/null 2>&1 || true
    compose down -v --remove-orphans -t 20 >/dev/null 2>&1 || compose down -v --remove-orphans -t 20 || true
  fi
  if [[ -n "$STARTED_DOCKERD" && "${UHP_CONTAINERS_KEEP_ENGINE:-}" != 1 ]]; then
    kill -TERM "$STARTED_DOCKERD" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$STARTED_DOCKERD" 2>/dev/null || break; sleep 0.5; done
    echo "dockerd (pid $STARTED_DOCKERD, started by this run) stopped"
  fi
  [[ -n "${CA_BUNDLE:-}" ]] && rm -f "$CA_BUNDLE"
  end_phase
  print_timings
  if ((STATUS == 0)); then echo "containers: passed"; else echo "containers: FAILED (exit $STATUS)" >&2; fi
  exit "$STATUS"
}
trap finish EXIT
trap 'exit 130' INT TERM

# One run at a time on this machine, whichever checkout it comes from: the compose project name,
# the gateway's port and the Docker engine are shared, so the lock lives outside the checkout.
CT_LOCK="${UHP_CONTAINERS_LOCK:-/tmp/uhp-files-containers.lock}"
exec 8>"$CT_LOCK"
flock -w 1200 8 || die "another test:containers run holds $CT_LOCK"

# ------------------------------------------------------------------------------------- engine ---
phase engine
need=()
[[ -x "$DOCKER" ]] || need+=(docker.io)
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
compose_cmd >/dev/null || need+=(docker-compose)
if ((${#need[@]})); then
  [[ $(id -u) == 0 ]] || die "missing ${need[*]}; run as root or: sudo apt-get install -y --no-install-recommends docker.io docker-compose debootstrap"
  echo "installing docker.io docker-compose debootstrap (apt-get)"
  if ! apt-get install -y -qq --no-install-recommends docker.io docker-compose debootstrap >"$CT_DATA/apt.log" 2>&1; then
    apt-get update -qq >>"$CT_DATA/apt.log" 2>&1 || true
    apt-get install -y -qq --no-install-recommends docker.io docker-compose debootstrap >>"$CT_DATA/apt.log" 2>&1 ||
      { tail -n 30 "$CT_DATA/apt.log" >&2; die "apt-get install failed"; }
  fi
fi
if ! "$DOCKER" info >/dev/null 2>&1; then
  [[ $(id -u) == 0 ]] || die "no Docker engine answers and not root: start dockerd first"
  echo "starting dockerd (--iptables=false --ip-masq=false --bridge=none), log: $CT_DATA/dockerd.log"
  # 8>&-: dockerd must not inherit the run lock, or a kept engine (UHP_CONTAINERS_KEEP_ENGINE=1) holds it forever.
  nohup dockerd --iptables=false --ip-masq=false --bridge=none >>"$CT_DATA/dockerd.log" 2>&1 </dev/null 8>&- &
  STARTED_DOCKERD=$!
  for _ in $(seq 1 120); do "$DOCKER" info >/dev/null 2>&1 && break; kill -0 "$STARTED_DOCKERD" 2>/dev/null || break; sleep 0.5; done
  "$DOCKER" info >/dev/null 2>&1 || { tail -n 30 "$CT_DATA/dockerd.log" >&2; die "dockerd did not start"; }
fi
echo "engine: $("$DOCKER" version --format 'Docker {{.Server.Version}}'), compose: $(compose_cmd) ($($(compose_cmd) version --short 2>/dev/null || true))"

# ---------------------------------------------------------------------------------- stand-ins ---
if [[ "${UHP_CONTAINERS_REAL_IMAGES:-}" != 1 ]]; then
  phase stand-ins
  bash "$HERE/standins.sh"
  BASE_ARGS=(--build-arg "NODE_IMAGE=$STANDIN_NODE")
else
  BASE_ARGS=()
fi

# -------------------------------------------------------------------------------------- build ---
phase build
# A TLS-intercepting proxy's CA for npm inside the build, as a BuildKit secret (never in an image).
SECRET_ARGS=()
if [[ -n "${NODE_EXTRA_CA_CERTS:-}" && -r "${NODE_EXTRA_CA_CERTS}" ]]; then
  SECRET_ARGS=(--secret "id=npm_ca,src=$NODE_EXTRA_CA_CERTS")
elif compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
  CA_BUNDLE="$(mktemp "$CT_DATA/ca.XXXXXX")"
  cat /usr/local/share/ca-certificates/*.crt >"$CA_BUNDLE"
  SECRET_ARGS=(--secret "id=npm_ca,src=$CA_BUNDLE")
fi
for target in "${APP_IMAGES[@]}"; do
  t0=$SECONDS
  DOCKER_BUILDKIT=1 nice "$DOCKER" build --network host --progress=plain -f infra/docker/Dockerfile --target "$target" \
    "${BASE_ARGS[@]}" "${SECRET_ARGS[@]}" -t "uhp-files-$target:local" . >"$CT_DATA/build-$target.log" 2>&1 ||
    { tail -n 40 "$CT_DATA/build-$target.log" >&2; die "building $target failed (log: $CT_DATA/build-$target.log)"; }
  echo "uhp-files-$target:local built in $((SECONDS - t0)) s"
done

# ------------------------------------------------------------------------------- image checks ---
phase "image checks"
check_image() { # check_image TARGET: what every image promises, plus the per-target part
  local target="$1" image="uhp-files-$1:local" config
  config="$("$DOCKER" image inspect -f '{{.Config.User}} {{json .Config.Entrypoint}}' "$image")"
  [[ "$config" == '1000:1000 ["/usr/bin/tini","--"]' ]] || die "$image: user/entrypoint is '$config', want 1000:1000 and tini"
  "$DOCKER" run --rm --read-only --cap-drop ALL --security-opt no-new-privileges:true --network none -e TARGET="$target" "$image" sh -ec '
    fail() { echo "$TARGET: $*" >&2; exit 1; }
    [ "$(id -u):$(id -g)" = 1000:1000 ] || fail "runs as $(id -u):$(id -g)"
    [ "$(cat /proc/1/comm)" = tini ] || fail "PID 1 is $(cat /proc/1/comm), not tini"
    ! touch /app/.write-test 2>/dev/null || fail "the root filesystem is writable"
    case "$(node --version)" in v24.*) ;; *) fail "Node $(node --version), want 24";; esac
    for tool in npm npx yarn corepack tsc gcc cc make; do ! command -v $tool >/dev/null || fail "$tool is in the image"; done
    for package in prisma typescript @nestjs/cli vitest @types; do [ ! -e node_modules/$package ] || fail "node_modules/$package is in the image"; done
    case "$TARGET" in
      gateway|storage)
        for package in playwright-core sharp pdf-lib markdown-it @img; do [ ! -e node_modules/$package ] || fail "worker-only $package is in the image"; done
        ! grep -rqE "require\(\"(playwright-core|sharp|pdf-lib|markdown-it)\"\)" dist || fail "its code requires a worker-only package"
        for tool in soffice chromium qpdf pdftoppm; do ! command -v $tool >/dev/null || fail "converter $tool is in the image"; done
        [ -f dist/apps/$TARGET/src/main.js ] || fail "no dist/apps/$TARGET/src/main.js";;
      worker)
        for tool in soffice chromium qpdf pdfinfo pdftoppm unshare prlimit python3; do command -v $tool >/dev/null || fail "$tool is missing"; done
        node -e "require(\"playwright-core\"); require(\"sharp\"); require(\"pdf-lib\"); require(\"markdown-it\")" || fail "a converter driver does not load";;
      migrate)
        [ "$(ls node_modules | grep -v "^pg" | grep -vE "^(postgres-|split2|xtend|pgpass)" | tr "\n" " ")" = "" ] ||
          fail "node_modules holds more than pg: $(ls node_modules | tr "\n" " ")"
        [ -f libs/db/prisma/migrations/migration_lock.toml ] || fail "no migrations";;
    esac'
  # As OpenShift's restricted SCC runs it: an arbitrary uid in group 0, no passwd entry, USER ignored, and the
  # root filesystem left writable, so the image's own modes decide. Each place the service writes is writable
  # to that uid without a mount; the code is not. (arbitrary-uid.test.ts runs the services as that uid, read-only.)
  "$DOCKER" run --rm --user 1000870000:0 --cap-drop ALL --security-opt no-new-privileges:true --network none \
    -e TARGET="$target" "$image" sh -ec '
    fail() { echo "$TARGET as uid $(id -u) gid $(id -g): $*" >&2; exit 1; }
    ! getent passwd "$(id -u)" >/dev/null || fail "the uid has a passwd entry"
    [ "$HOME" = /tmp ] || fail "HOME is ${HOME:-unset}, want /tmp from the image"
    for dir in "$HOME" "${TMPDIR:-/tmp}" ${PREVIEW_WORK_DIR:+"$PREVIEW_WORK_DIR"}; do
      mkdir -p "$dir/.uid-check" && rmdir "$dir/.uid-check" || fail "cannot write in $dir"
    done
    ! touch /app/.write-test 2>/dev/null || fail "/app is writable"'
}
for target in "${APP_IMAGES[@]}"; do check_image "$target"; echo "uhp-files-$target:local: ok"; done
for target in gateway storage; do
  size="$("$DOCKER" image inspect -f '{{.Size}}' "uhp-files-$target:local")"
  ((size <= 250000000)) || die "uhp-files-$target:local is $((size / 1000000)) MB, over 250 MB"
done
"$DOCKER" image ls --format '{{.Repository}}:{{.Tag}}  {{.Size}}' | grep -E '^uhp-files-' | sort

# --------------------------------------------------------------------------------- compose up ---
phase "compose up"
compose config -q
STACK_UP=1
compose down -v --remove-orphans -t 10 >/dev/null 2>&1 || true # leftovers of an interrupted run
compose up -d --no-build >"$CT_DATA/compose-up.log" 2>&1 || { cat "$CT_DATA/compose-up.log" >&2; die "compose up failed"; }
services=(postgres redis minio storage gateway worker-preview worker-archive worker-purge)
for service in "${services[@]}"; do
  wait_healthy 180 "$(container_of "$service")" || die "$service did not become healthy"
done
for once in migrate minio-setup; do
  code="$("$DOCKER" inspect -f '{{.State.ExitCode}}' "$(container_of "$once")")"
  [[ "$code" == 0 ]] || die "$once exited with $code"
done
compose logs --no-color migrate 2>/dev/null | grep -E 'migrate:' | sed 's/^[^|]*| //' || true
# Published: the gateway on 127.0.0.1 only; nothing else (storage, workers, backing services).
for service in "${services[@]}"; do
  published="$("$DOCKER" port "$(container_of "$service")" 2>/dev/null || true)"
  if [[ "$service" == gateway ]]; then
    [[ "$published" == "8080/tcp -> 127.0.0.1:$CT_PORT" ]] || die "gateway published as '$published'"
  else
    [[ -z "$published" ]] || die "$service is published: $published"
  fi
done
curl_status="$(node -e "fetch('$CT_BASE_URL/readyz').then((r) => console.log(r.status), (e) => console.log(String(e)))")"
[[ "$curl_status" == 200 ]] || die "GET $CT_BASE_URL/readyz from the host: $curl_status"
echo "stack healthy; gateway at $CT_BASE_URL"

# -------------------------------------------------------------------------------- conformance ---
phase conformance
read -ra TEST_FILTERS <<<"${UHP_CONTAINERS_TESTS:-}"
if ((${#TEST_FILTERS[@]})); then
  echo "skipped: UHP_CONTAINERS_TESTS selects container tests (${TEST_FILTERS[*]})"
else
  CONFORMANCE="$ROOT/../shared/conformance/run.mjs"
  [[ -f "$CONFORMANCE" ]] || die "missing $CONFORMANCE (the public conformance suite)"
  eval "$(bash "$HERE/harness.sh" env)"
  node "$CONFORMANCE" --base-url "$UHP_CT_BASE_URL" --key-a "$UHP_CT_KEY_A" --key-b "$UHP_CT_KEY_B" \
    --json "$CT_DATA/conformance.json" >"$CT_DATA/conformance.log" 2>&1 || {
    grep -E '^(FAIL|conformance:)' "$CT_DATA/conformance.log" >&2
    die "conformance failed (log: $CT_DATA/conformance.log)"
  }
  grep -E '^skip' "$CT_DATA/conformance.log" || true
  tail -n 1 "$CT_DATA/conformance.log"
  previews="$("$DOCKER" exec "$(container_of worker-preview)" node -e "fetch('http://127.0.0.1:8082/readyz').then((r) => r.json()).then((b) => console.log(Object.entries(b.previews.converters).map(([n, s]) => n + (s.ok ? '' : ' (unavailable)')).join(', ')))")"
  isolation="$("$DOCKER" exec "$(container_of worker-preview)" node -e "fetch('http://127.0.0.1:8082/readyz').then((r) => r.json()).then((b) => console.log(JSON.stringify(b.previews.isolation)))")"
  echo "preview converters in worker-preview: $previews; isolation: $isolation"
fi

# ---------------------------------------------------------------------------- container tests ---
phase "container tests"
[[ -x node_modules/.bin/vitest ]] || npm ci --no-audit --no-fund
nice npx vitest run --config test/containers/vitest.config.ts "${TEST_FILTERS[@]}"

end_phase
