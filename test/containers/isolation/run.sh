#!/usr/bin/env bash
# The isolation probe (probe.sh) in the worker image, under the settings docker-compose.yml gives the
# workers (uid 1000, read-only root, tmpfs /tmp, cap_drop ALL, no-new-privileges, the runtime's
# default seccomp profile) and under looser ones for comparison. Not part of `npm run test:containers`
# (it answers a question, it asserts nothing); run it by hand after the worker image is built:
#
#   bash test/containers/isolation/run.sh [IMAGE]      # default uhp-files-worker:local
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DOCKER="${UHP_DOCKER:-/usr/bin/docker}"
IMAGE="${1:-uhp-files-worker:local}"
COMMON=(--rm --user 1000:1000 --read-only --tmpfs /tmp:exec --network none -v "$HERE:/probe:ro")

run() { # run TITLE DOCKER-RUN-OPTIONS...
  local title="$1"; shift
  printf '\n##### %s\n' "$title"
  "$DOCKER" run "${COMMON[@]}" "$@" "$IMAGE" /probe/probe.sh
}

"$DOCKER" version --format 'docker engine {{.Server.Version}}, seccomp default profile' 2>/dev/null || true
run 'as compose runs the workers: default seccomp, cap_drop ALL, no-new-privileges' --cap-drop ALL --security-opt no-new-privileges:true
run 'default seccomp, cap_drop ALL, new privileges allowed (setuid helpers)' --cap-drop ALL
run 'seccomp=unconfined, cap_drop ALL, no-new-privileges' --cap-drop ALL --security-opt no-new-privileges:true --security-opt seccomp=unconfined
