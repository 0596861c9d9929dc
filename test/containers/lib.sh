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
