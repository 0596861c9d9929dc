#!/bin/bash
# One-node Ceph with radosgw on 0.0.0.0:9000, fresh on every start (memstore). Arguments (MinIO's
# `server /data`) are accepted and ignored. Stops the daemons on SIGTERM.
set -euo pipefail
ACCESS="${MINIO_ROOT_USER:?MINIO_ROOT_USER must be set}"
SECRET="${MINIO_ROOT_PASSWORD:?MINIO_ROOT_PASSWORD must be set}"
STATE=/tmp/ceph
CONF="$STATE/ceph.conf"
rm -rf "$STATE" /tmp/s3-ready && mkdir -p "$STATE"/{run,log,mon.a,osd.0}
fsid="$(cat /proc/sys/kernel/random/uuid)"
cat >"$CONF" <<CONF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:3300
public addr = 127.0.0.1
public network = 127.0.0.0/8
ms bind ipv6 = false
ms bind msgr1 = false
auth cluster required = none
auth service required = none
auth client required = none
ms cluster mode = crc
ms service mode = crc
ms client mode = crc
ms mon cluster mode = crc
ms mon service mode = crc
ms mon client mode = crc
ms crc data = false
mon warn on insecure global id reclaim allowed = false
run dir = $STATE/run
log file = $STATE/log/\$name.log
log to stderr = false
err to stderr = true
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
mon data avail warn = 1
mon data avail crit = 0
debug ms = 0/0
debug mon = 0/0
debug osd = 0/0
debug rgw = 0/0
[client]
admin socket =
[mon]
mon data = $STATE/mon.\$id
paxos propose interval = 0.05
paxos min wait = 0.01
[osd]
osd data = $STATE/osd.\$id
osd objectstore = memstore
memstore device bytes = ${S3_STANDIN_MEMORY_BYTES:-2147483648}
osd op num shards = 2
osd op num threads per shard = 1
[client.rgw.a]
rgw frontends = beast endpoint=0.0.0.0:9000
rgw thread pool size = 64
rgw enable usage log = false
rgw enable ops log = false
rgw dynamic resharding = false
rgw enable apis = s3, admin
CONF
say() { echo "s3 stand-in: $*"; }
fail() { say "$1"; tail -n 30 "$STATE"/log/*.log 2>/dev/null || true; exit 1; }
wait_for() { local n="$1"; shift; for ((i = 0; i < n * 10; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done; return 1; }
ceph_() { timeout 30 ceph -c "$CONF" --connect-timeout 20 "$@"; }

monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:3300]" "$STATE/monmap" >/dev/null
ceph-mon -c "$CONF" --mkfs -i a --monmap "$STATE/monmap" || fail "ceph-mon --mkfs failed"
ceph-mon -c "$CONF" -i a -f &
pids=($!)
wait_for 30 ceph_ mon stat || fail "no monitor"
uuid="$(cat /proc/sys/kernel/random/uuid)"
[[ "$(ceph_ osd new "$uuid")" == 0 ]] || fail "ceph osd new failed"
ceph-osd -c "$CONF" -i 0 --mkfs --osd-uuid "$uuid" >/dev/null 2>&1 || fail "ceph-osd --mkfs failed"
ceph-osd -c "$CONF" -i 0 -f &
pids+=($!)
wait_for 60 sh -c "ceph -c '$CONF' osd dump 2>/dev/null | grep -q '^osd.0 up'" || fail "the OSD did not come up"
radosgw -c "$CONF" -n client.rgw.a -f &
rgw=$!
# radosgw first (it still talks to the OSD while stopping), then the OSD and the monitor.
stop() { kill -TERM "$rgw" 2>/dev/null; wait "$rgw" 2>/dev/null; kill -TERM "${pids[1]}" "${pids[0]}" 2>/dev/null; wait; exit 0; }
trap stop TERM INT
wait_for 120 s3-tool get-service-any || fail "radosgw did not answer on :9000"
radosgw-admin -c "$CONF" user create --uid=uhp --display-name=uhp --access-key="$ACCESS" --secret="$SECRET" >/dev/null ||
  fail "radosgw-admin user create failed"
wait_for 30 s3-tool ready || fail "the S3 key does not work"
touch /tmp/s3-ready
say "ready on :9000"
wait $rgw
