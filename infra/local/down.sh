#!/usr/bin/env bash
# Stops what infra/local/up.sh started for this repo: the local S3 (Ceph) daemons.
# The system PostgreSQL and Redis are shared and left running.
set -euo pipefail
exec "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/s3.sh" stop
