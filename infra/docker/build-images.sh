#!/usr/bin/env bash
# `npm run images`: builds the four images of infra/docker/Dockerfile with the tags the Helm chart deploys:
#   [UHP_IMAGE_REGISTRY/]${UHP_IMAGE_REPOSITORY:-uhp-files}-<gateway|storage|worker|migrate>:<package.json version>
# (the chart's appVersion, which `npm run chart:package` sets to the same version).
#   --print-tags   print the tags, one per line, and build nothing
#   -- ARGS        further `docker build` arguments, e.g. -- --build-arg NODE_IMAGE=…
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
VERSION="$(node -p 'require("./package.json").version')"
PREFIX="${UHP_IMAGE_REGISTRY:+$UHP_IMAGE_REGISTRY/}${UHP_IMAGE_REPOSITORY:-uhp-files}"
TARGETS=(gateway storage worker migrate)

PRINT_ONLY=0 EXTRA=()
while (($#)); do
  case "$1" in
    --print-tags) PRINT_ONLY=1 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) echo "build-images: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

for target in "${TARGETS[@]}"; do
  tag="$PREFIX-$target:$VERSION"
  if ((PRINT_ONLY)); then echo "$tag"; continue; fi
  DOCKER_BUILDKIT=1 docker build -f infra/docker/Dockerfile --target "$target" -t "$tag" "${EXTRA[@]}" .
  echo "built $tag"
done
