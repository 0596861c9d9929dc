#!/usr/bin/env bash
# PgBouncer and HAProxy from Debian, for the HA topologies (test/ha/pgbouncer.sh, test/ha/replicas.sh):
# installs whichever is missing. Idempotent.
set -euo pipefail
missing=()
command -v pgbouncer >/dev/null 2>&1 || missing+=(pgbouncer)
command -v haproxy >/dev/null 2>&1 || missing+=(haproxy)
((${#missing[@]})) || exit 0
(($(id -u) == 0)) || { echo "missing: ${missing[*]} (apt-get install ${missing[*]})" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
echo "[ha-tools] installing: ${missing[*]}"
# Debian starts no service here (no systemd); the tests run private instances with configurations of their own.
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
