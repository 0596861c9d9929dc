#!/usr/bin/env bash
# Local S3 server for development and CI: a single-node Ceph cluster
# (1 monitor, 1 bluestore OSD on a sparse file, radosgw) bound to loopback.
#
#   infra/local/s3.sh start    # initialise on first use, start, ensure user + bucket
#                              # (http on S3_PORT, and https on S3_TLS_PORT with a CA of its own)
#   infra/local/s3.sh stop     # stop the daemons (objects are kept)
#   infra/local/s3.sh status   # exit 0 when the S3 endpoints answer and the disk is not full
#   infra/local/s3.sh reclaim  # free deleted objects' space now; prints "<free bytes> <disk bytes>"
#
# See infra/local/README.md for the environment variables.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"

S3_PORT="${S3_PORT:-7480}"
S3_TLS_PORT="${S3_TLS_PORT:-7443}"          # the same S3 over https (0: none), certificate from $STATE/tls/ca.pem
S3_ACCESS_KEY_ID="${S3_ACCESS_KEY_ID:-uhp-dev-access}"
S3_SECRET_ACCESS_KEY="${S3_SECRET_ACCESS_KEY:-uhp-dev-secret-key-0123456789}"
S3_BUCKET="${S3_BUCKET:-uhp-files}"
S3_MON_PORT="${S3_MON_PORT:-3300}"          # ceph monitor (msgr2), loopback only
S3_DISK_GB="${S3_DISK_GB:-20}"              # size of the sparse OSD block file (fixed at first init)
S3_START_TIMEOUT="${S3_START_TIMEOUT:-120}" # seconds
DATA_DIR="${UHP_DATA_DIR:-$REPO_ROOT/.data}"
case "$DATA_DIR" in /*) ;; *) DATA_DIR="$PWD/$DATA_DIR" ;; esac
STATE="$DATA_DIR/ceph"
CONF="$STATE/ceph.conf"
ENDPOINT="http://127.0.0.1:$S3_PORT"
TLS_DIR="$STATE/tls"
TLS_ENDPOINT="https://127.0.0.1:$S3_TLS_PORT"
REGION="us-east-1"

log() { printf '[s3] %s\n' "$*" >&2; }
die() { printf '[s3] ERROR: %s\n' "$*" >&2; exit 1; }

show_log() { # show_log FILE [LINES]
  local f="$1" n="${2:-40}"
  if [[ -s "$f" ]]; then
    printf '[s3] ---- last %s lines of %s ----\n' "$n" "$f" >&2
    tail -n "$n" "$f" >&2 || true
    printf '[s3] ----\n' >&2
  fi
}

fail() { # fail MESSAGE [LOGFILE...]
  local msg="$1"; shift
  local f
  for f in "$@"; do show_log "$f"; done
  die "$msg"
}

# ---------------------------------------------------------------- checks ---
check_inputs() {
  [[ "$S3_PORT" =~ ^[0-9]+$ ]] || die "S3_PORT must be a number (got '$S3_PORT')"
  [[ "$S3_TLS_PORT" =~ ^[0-9]+$ ]] || die "S3_TLS_PORT must be a number, 0 for no https (got '$S3_TLS_PORT')"
  [[ "$S3_TLS_PORT" != "$S3_PORT" ]] || die "S3_TLS_PORT must differ from S3_PORT ($S3_PORT)"
  [[ "$S3_MON_PORT" =~ ^[0-9]+$ ]] || die "S3_MON_PORT must be a number (got '$S3_MON_PORT')"
  [[ "$S3_DISK_GB" =~ ^[0-9]+$ ]] || die "S3_DISK_GB must be a number (got '$S3_DISK_GB')"
  # ceph.conf expands $name-style meta variables and treats '#'/';' as comments:
  # keep the state path plain.
  [[ "$STATE" =~ ^[A-Za-z0-9._/+@:-]+$ ]] ||
    die "state dir '$STATE' contains characters ceph.conf cannot carry; set UHP_DATA_DIR to a plain path"
  [[ "$S3_BUCKET" =~ ^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$ ]] || die "S3_BUCKET '$S3_BUCKET' is not a valid bucket name"
  [[ "$S3_ACCESS_KEY_ID" =~ ^[A-Za-z0-9._-]+$ ]] || die "S3_ACCESS_KEY_ID may only contain [A-Za-z0-9._-]"
  [[ -n "$S3_SECRET_ACCESS_KEY" && "$S3_SECRET_ACCESS_KEY" != *[[:space:]]* ]] || die "S3_SECRET_ACCESS_KEY must be non-empty without spaces"
}

ensure_installed() {
  local missing=()
  command -v ceph-mon >/dev/null 2>&1 || missing+=(ceph-mon)
  command -v ceph-osd >/dev/null 2>&1 || missing+=(ceph-osd)
  command -v radosgw >/dev/null 2>&1 || missing+=(radosgw)
  command -v curl >/dev/null 2>&1 || missing+=(curl)
  command -v python3 >/dev/null 2>&1 || missing+=(python3)
  ((S3_TLS_PORT == 0)) || command -v openssl >/dev/null 2>&1 || missing+=(openssl)
  ((${#missing[@]} == 0)) && return 0
  local cmd="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
  if [[ "${UHP_NO_INSTALL:-}" == 1 ]]; then
    die "missing: ${missing[*]}. Install with:  $cmd"
  fi
  [[ $(id -u) == 0 ]] || die "missing: ${missing[*]} and not root. Install with:  sudo sh -c '$cmd'"
  log "installing ${missing[*]} (apt-get) ..."
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends "${missing[@]}" >"/tmp/uhp-apt-ceph.$$.log" 2>&1; then
    apt-get update >>"/tmp/uhp-apt-ceph.$$.log" 2>&1 || true
    apt-get install -y --no-install-recommends "${missing[@]}" >>"/tmp/uhp-apt-ceph.$$.log" 2>&1 ||
      fail "apt-get install ${missing[*]} failed" "/tmp/uhp-apt-ceph.$$.log"
  fi
  rm -f "/tmp/uhp-apt-ceph.$$.log"
  # The Debian packages enable systemd units; we never use them.
  # (Nothing is started by them: our cluster has its own conf and data dir.)
}

# -------------------------------------------------------------- helpers ---
http_code() { # http_code URL -> prints HTTP status (000 when nothing answers)
  curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$1" 2>/dev/null || true
}

s3_answers() {
  local c
  c="$(http_code "$ENDPOINT/")"
  [[ -n "$c" && "$c" != 000 ]]
}

tls_answers() { # the https endpoint answers with a certificate our CA vouches for (always true without one)
  ((S3_TLS_PORT == 0)) && return 0
  local c
  c="$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 --cacert "$TLS_DIR/ca.pem" "$TLS_ENDPOINT/" 2>/dev/null ||
    true)"
  [[ -n "$c" && "$c" != 000 ]]
}

pid_of() { # pid_of NAME -> prints pid if the daemon from our pid file is alive
  local f="$STATE/run/$1.pid" pid
  [[ -s "$f" ]] || return 1
  pid="$(tr -dc 0-9 <"$f")"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
  # guard against pid reuse: the process must be a ceph daemon using our conf
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$CONF" || return 1
  echo "$pid"
}

ceph_cli() { timeout 60 ceph -c "$CONF" --connect-timeout 30 "$@"; }
rgw_admin() { timeout 120 radosgw-admin -c "$CONF" "$@"; }

wait_for() { # wait_for SECONDS CMD...
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.3
  done
}

# Signed S3 requests with the configured credentials: python3 standard library
# only (AWS SigV4), so nothing from npm is needed before the repo is installed.
#   s3_py head-bucket|get-service|put-bucket  -> prints "<status> <error code>"
#   s3_py warm-up  -> put/delete a tiny object, create/abort a multipart upload
#                     (makes rgw create its data pools now, not in the first test)
s3_py() {
  S3_PORT="$S3_PORT" S3_ACCESS_KEY_ID="$S3_ACCESS_KEY_ID" S3_SECRET_ACCESS_KEY="$S3_SECRET_ACCESS_KEY" \
    S3_BUCKET="$S3_BUCKET" S3_REGION="$REGION" python3 - "$1" <<'PY'
import datetime, hashlib, hmac, os, re, sys, urllib.error, urllib.parse, urllib.request
host = "127.0.0.1:" + os.environ["S3_PORT"]
ak, sk = os.environ["S3_ACCESS_KEY_ID"], os.environ["S3_SECRET_ACCESS_KEY"]
bucket, region = os.environ["S3_BUCKET"], os.environ["S3_REGION"]

def req(method, path, query="", body=b""):
    now = datetime.datetime.now(datetime.timezone.utc)
    amzdate, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    ph = hashlib.sha256(body).hexdigest()
    hd = {"host": host, "x-amz-content-sha256": ph, "x-amz-date": amzdate}
    signed = ";".join(sorted(hd))
    cq = "&".join(sorted(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                         for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True)))
    canon = "\n".join([method, urllib.parse.quote(path, safe="/-_.~"), cq,
                       "".join(f"{k}:{hd[k]}\n" for k in sorted(hd)), signed, ph])
    scope = f"{day}/{region}/s3/aws4_request"
    sts = "\n".join(["AWS4-HMAC-SHA256", amzdate, scope, hashlib.sha256(canon.encode()).hexdigest()])
    k = ("AWS4" + sk).encode()
    for part in (day, region, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    h = {x: y for x, y in hd.items() if x != "host"}
    h["Authorization"] = f"AWS4-HMAC-SHA256 Credential={ak}/{scope}, SignedHeaders={signed}, Signature={sig}"
    url = f"http://{host}{urllib.parse.quote(path, safe='/-_.~')}" + (f"?{query}" if query else "")
    r = urllib.request.Request(url, method=method, headers=h,
                               data=body if method in ("PUT", "POST") else None)
    try:
        with urllib.request.urlopen(r, timeout=60) as resp:
            return resp.status, "-", resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        text = e.read().decode("utf-8", "replace")
        m = re.search(r"<Code>([^<]+)</Code>", text)
        return e.code, (m.group(1) if m else "-"), text
    except Exception as e:
        return 0, type(e).__name__, ""

cmd = sys.argv[1]
if cmd == "head-bucket":
    st, code, _ = req("HEAD", f"/{bucket}")
elif cmd == "get-service":
    st, code, _ = req("GET", "/")
elif cmd == "put-bucket":
    st, code, _ = req("PUT", f"/{bucket}")
elif cmd == "warm-up":
    key = f"/{bucket}/.uhp-warm-up"
    for step in (lambda: req("PUT", key, body=b"x"), lambda: req("DELETE", key)):
        st, code, _ = step()
        if st not in (200, 204):
            print(st, code); sys.exit(0)
    st, code, text = req("POST", key, "uploads=")
    m = re.search(r"<UploadId>([^<]+)</UploadId>", text)
    if st == 200 and m:
        st, code, _ = req("DELETE", key, "uploadId=" + m.group(1))
        st = 200 if st == 204 else st
else:
    sys.exit("unknown s3_py command " + cmd)
print(st, code)
PY
}

# ------------------------------------------------------------------ TLS ---
# The https listener's certificate: a CA of this data dir, made once and kept (clients trust $TLS_DIR/ca.pem,
# e.g. NODE_EXTRA_CA_CERTS), and a server certificate for 127.0.0.1 and localhost that it signs, made again
# when it is missing, about to expire, or not the CA's.
ensure_tls_cert() {
  ((S3_TLS_PORT == 0)) && return 0
  local tls_log="$STATE/log/tls.log"
  mkdir -p "$TLS_DIR" "$STATE/log"
  if [[ ! -s "$TLS_DIR/ca.pem" || ! -s "$TLS_DIR/ca.key" ]]; then
    log "creating the CA of the https endpoint: $TLS_DIR/ca.pem"
    rm -f "$TLS_DIR/ca.pem" "$TLS_DIR/ca.key" "$TLS_DIR/server.pem" "$TLS_DIR/server.key"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
      -subj "/CN=uhp-files local S3 CA" -keyout "$TLS_DIR/ca.key" -out "$TLS_DIR/ca.pem" \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign >>"$tls_log" 2>&1 ||
      fail "openssl could not create the CA" "$tls_log"
    chmod 600 "$TLS_DIR/ca.key"
  fi
  if [[ -s "$TLS_DIR/server.pem" && -s "$TLS_DIR/server.key" ]] &&
    openssl x509 -checkend 86400 -noout -in "$TLS_DIR/server.pem" >/dev/null 2>&1 &&
    openssl verify -CAfile "$TLS_DIR/ca.pem" "$TLS_DIR/server.pem" >/dev/null 2>&1; then
    return 0
  fi
  log "issuing the https endpoint's certificate (127.0.0.1, localhost)"
  printf '%s\n' 'subjectAltName = IP:127.0.0.1, DNS:localhost' 'basicConstraints = critical, CA:FALSE' \
    'keyUsage = critical, digitalSignature' 'extendedKeyUsage = serverAuth' >"$TLS_DIR/server.ext"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$TLS_DIR/server.key" -out "$TLS_DIR/server.csr" >>"$tls_log" 2>&1 &&
    openssl x509 -req -in "$TLS_DIR/server.csr" -CA "$TLS_DIR/ca.pem" -CAkey "$TLS_DIR/ca.key" \
      -set_serial "0x$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" -days 825 -extfile "$TLS_DIR/server.ext" \
      -out "$TLS_DIR/server.pem" >>"$tls_log" 2>&1 ||
    fail "openssl could not issue the server certificate" "$tls_log"
  chmod 600 "$TLS_DIR/server.key"
  rm -f "$TLS_DIR/server.csr" "$TLS_DIR/server.ext"
}

# radosgw's listeners: plain http always; https beside it unless S3_TLS_PORT=0.
rgw_frontends() {
  local line="beast endpoint=127.0.0.1:$S3_PORT"
  ((S3_TLS_PORT == 0)) ||
    line+=" ssl_endpoint=127.0.0.1:$S3_TLS_PORT ssl_certificate=$TLS_DIR/server.pem ssl_private_key=$TLS_DIR/server.key"
  echo "$line"
}
# the listeners the running radosgw was started with (the conf is written before each start)
conf_frontends() { sed -n 's/^rgw frontends = //p' "$CONF" 2>/dev/null; }

# ------------------------------------------------------------ ceph.conf ---
write_conf() {
  local fsid="$1"
  mkdir -p "$STATE"/{run,log,crash,mon.a,osd.0,rgw.a}
  cat >"$CONF.tmp" <<EOF
# Generated by infra/local/s3.sh - single-node dev cluster, loopback only.
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$S3_MON_PORT
public addr = 127.0.0.1
public network = 127.0.0.0/8
ms bind ipv6 = false
ms bind msgr1 = false
auth cluster required = none
auth service required = none
auth client required = none
# with auth none there is no session key: msgr2 "secure" mode (the default for
# daemons talking to the mon) fails with EACCES, so use crc everywhere
ms cluster mode = crc
ms service mode = crc
ms client mode = crc
ms mon cluster mode = crc
ms mon service mode = crc
ms mon client mode = crc
# loopback only: skip the messenger's data checksums (CPU)
ms crc data = false
mon warn on insecure global id reclaim allowed = false
run dir = $STATE/run
crash dir = $STATE/crash
log file = $STATE/log/\$name.log
mon cluster log file = $STATE/log/cluster.log
mon cluster log file level = info
log to stderr = false
err to stderr = true
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
mon data avail warn = 5
mon data avail crit = 2
# quiet logs (CPU and disk)
debug ms = 0/0
debug mon = 0/0
debug paxos = 0/0
debug osd = 0/0
debug bluestore = 0/0
debug bluefs = 0/0
debug bdev = 0/0
debug rocksdb = 0/0
debug rgw = 0/0
debug rados = 0/0
debug auth = 0/0
debug monc = 0/0
debug objecter = 0/0

[client]
# CLI tools (ceph, radosgw-admin): no admin socket, log next to the daemons
admin socket =
log file = $STATE/log/client.log

[mon]
mon data = $STATE/mon.\$id
# commit map changes (pool creation, OSD boot) quickly instead of batching for 1 s
paxos propose interval = 0.05
paxos min wait = 0.01
admin socket = $STATE/run/\$name.asok
pid file = $STATE/run/\$name.pid

[osd]
osd data = $STATE/osd.\$id
admin socket = $STATE/run/\$name.asok
pid file = $STATE/run/\$name.pid
osd objectstore = bluestore
bluestore block path = $STATE/osd.\$id.block
bluestore block create = true
bluestore block size = $((S3_DISK_GB * 1024 * 1024 * 1024))
bluestore block db create = false
bluestore block wal create = false
bluestore fsck on mount = false
bluestore fsck on mkfs = false
bluestore fsck on umount = false
# RAM: fixed small caches instead of the 4 GiB autotuned target
bluestore cache autotune = false
bluestore cache size = 134217728
osd memory target = 939524096
osd memory cache min = 67108864
bluestore rocksdb options = compression=kNoCompression,max_write_buffer_number=2,min_write_buffer_number_to_merge=1,recycle_log_file_num=2,write_buffer_size=33554432,writable_file_max_buffer_size=0,compaction_readahead_size=2097152,max_background_compactions=1,max_total_wal_size=134217728
# big sequential writes go straight to the block file, not through the WAL
bluestore prefer deferred size hdd = 0
bluestore prefer deferred size ssd = 0
bluestore throttle bytes = 268435456
bluestore throttle deferred bytes = 134217728
bluestore csum type = none
osd op num shards = 2
osd op num threads per shard = 2
osd max backfills = 1
osd scrub during recovery = false
osd scrub begin hour = 0
osd scrub end hour = 0
osd_scrub_min_interval = 31536000
osd_scrub_max_interval = 31536000
osd_deep_scrub_interval = 31536000
osd crush update on start = true

[client.rgw.a]
rgw data = $STATE/rgw.a
admin socket = $STATE/run/\$name.asok
pid file = $STATE/run/\$name.pid
log file = $STATE/log/\$name.log
rgw frontends = $(rgw_frontends)
rgw thread pool size = 128
rgw enable usage log = false
rgw enable ops log = false
rgw dynamic resharding = false
rgw gc obj min wait = 30
rgw gc processor period = 30
rgw lc debug interval = -1
rgw relaxed s3 bucket names = false
rgw cache lru size = 10000
rgw enable apis = s3, admin
rgw init timeout = $S3_START_TIMEOUT
EOF
  mv "$CONF.tmp" "$CONF"
}

# --------------------------------------------------------------- daemons ---
start_mon() {
  pid_of mon.a >/dev/null && return 0
  ceph-mon -c "$CONF" -i a 9>&- >>"$STATE/log/start.log" 2>&1 || fail "ceph-mon failed to start" "$STATE/log/start.log" "$STATE/log/mon.a.log"
}
start_osd() {
  pid_of osd.0 >/dev/null && return 0
  ceph-osd -c "$CONF" -i 0 9>&- >>"$STATE/log/start.log" 2>&1 || fail "ceph-osd failed to start" "$STATE/log/start.log" "$STATE/log/osd.0.log"
}
start_rgw() {
  pid_of client.rgw.a >/dev/null && return 0
  # radosgw exits when it cannot bind any of its listeners: say which one, not just that it died
  if ((S3_TLS_PORT != 0)) && (exec 3<>"/dev/tcp/127.0.0.1/$S3_TLS_PORT") 2>/dev/null; then
    die "port $S3_TLS_PORT (S3_TLS_PORT, https) is taken by another program; set a free one, or 0 for no https"
  fi
  ensure_tls_cert
  # radosgw only forks into the background once it has reached the cluster, so
  # launch it in the background and let the caller wait for the HTTP port.
  nohup radosgw -c "$CONF" -n client.rgw.a 9>&- >>"$STATE/log/start.log" 2>&1 </dev/null &
  RGW_LAUNCHER=$!
}

rgw_wait() { # wait until the S3 port answers; fail early when radosgw died
  local t0=$SECONDS deadline=$((SECONDS + S3_START_TIMEOUT)) gone=0
  until s3_answers; do
    if ! pid_of client.rgw.a >/dev/null && ! { [[ -n "${RGW_LAUNCHER:-}" ]] && kill -0 "$RGW_LAUNCHER" 2>/dev/null; }; then
      ((++gone > 10)) && fail "radosgw exited during start-up" "$STATE/log/start.log" "$STATE/log/client.rgw.a.log"
    else
      gone=0
    fi
    if ((SECONDS - t0 > 5)); then
      pid_of mon.a >/dev/null || fail "ceph-mon is not running" "$STATE/log/start.log" "$STATE/log/mon.a.log"
      pid_of osd.0 >/dev/null || fail "ceph-osd is not running" "$STATE/log/start.log" "$STATE/log/osd.0.log"
    fi
    ((SECONDS < deadline)) || {
      pid_of mon.a >/dev/null || fail "ceph-mon is not running" "$STATE/log/mon.a.log"
      pid_of osd.0 >/dev/null || fail "ceph-osd is not running" "$STATE/log/osd.0.log"
      fail "radosgw did not answer on $ENDPOINT within ${S3_START_TIMEOUT}s" "$STATE/log/client.rgw.a.log" "$STATE/log/osd.0.log"
    }
    sleep 0.3
  done
  # both listeners open together: https missing now means its port is taken or its certificate unusable
  wait_for 15 tls_answers ||
    fail "radosgw answers on $ENDPOINT but not on $TLS_ENDPOINT (port taken? S3_TLS_PORT=0 turns https off)" \
      "$STATE/log/client.rgw.a.log" "$STATE/log/start.log"
}

mon_up() { ceph_cli -s >/dev/null 2>&1; }
osd_up() { [[ "$(ceph_cli osd stat -f json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("num_up_osds",0))' 2>/dev/null)" == 1 ]]; }

stop_daemons() { # stop_daemons NAME... : SIGTERM all, wait up to 30 s, then SIGKILL
  local name pid i pids=()
  for name in "$@"; do
    if pid="$(pid_of "$name")"; then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done
  for ((i = 0; i < 150 && ${#pids[@]} > 0; i++)); do
    local alive=()
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
    pids=("${alive[@]+"${alive[@]}"}")
    ((${#pids[@]} > 0)) && sleep 0.1
  done
  for pid in "${pids[@]+"${pids[@]}"}"; do
    log "pid $pid did not stop within 15 s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  done
  ((${#pids[@]} > 0)) && sleep 0.5
  for name in "$@"; do rm -f "$STATE/run/$name.pid"; done
}

# daemons of this state dir that have no (valid) pid file, e.g. from an init that was interrupted
stray_pids() {
  local d pid comm
  for d in /proc/[0-9]*; do
    pid="${d#/proc/}"
    comm="$(cat "$d/comm" 2>/dev/null)" || continue
    case "$comm" in ceph-mon | ceph-osd | radosgw) ;; *) continue ;; esac
    tr '\0' ' ' <"$d/cmdline" 2>/dev/null | grep -qF -- "-c $CONF " && echo "$pid"
  done
  return 0
}

stop_all() {
  # one at a time: radosgw still talks to the OSD while shutting down (hangs if
  # the OSD is gone) and the OSD tells the monitor it is going down
  stop_daemons client.rgw.a
  stop_daemons osd.0
  stop_daemons mon.a
  local pids=()
  mapfile -t pids < <(stray_pids)
  if ((${#pids[@]} > 0)); then
    log "stopping stray ceph processes of $STATE: ${pids[*]}"
    kill -TERM "${pids[@]}" 2>/dev/null || true
    sleep 2
    kill -KILL "${pids[@]}" 2>/dev/null || true
  fi
}

# ----------------------------------------------------------- user/bucket ---
uid_for_key() { echo "uhp-${S3_ACCESS_KEY_ID//[^A-Za-z0-9_-]/_}"; }

ensure_user() {
  local uid out
  uid="$(uid_for_key)"
  if rgw_admin user info --uid="$uid" >/dev/null 2>&1; then
    # user exists: (re)set this access key's secret
    out="$(rgw_admin key create --uid="$uid" --key-type=s3 --access-key="$S3_ACCESS_KEY_ID" --secret-key="$S3_SECRET_ACCESS_KEY" 2>&1)" ||
      { echo "$out" >&2; die "radosgw-admin key create failed"; }
  else
    out="$(rgw_admin user create --uid="$uid" --display-name="uhp dev ($S3_ACCESS_KEY_ID)" \
      --access-key="$S3_ACCESS_KEY_ID" --secret-key="$S3_SECRET_ACCESS_KEY" 2>&1)" ||
      { echo "$out" >&2; die "radosgw-admin user create failed"; }
  fi
}

# Make sure the credentials work and the bucket exists (cheap when all is fine).
ensure_user_and_bucket() {
  local res code err i
  for ((i = 0; i < 3; i++)); do
    res="$(s3_py head-bucket)"
    code="${res%% *}"
    case "$code" in
      200) return 0 ;;
      403)
        # HEAD has no body: find out whether the key is unknown / wrong, or the bucket is someone else's
        res="$(s3_py get-service)"
        if [[ "${res%% *}" == 403 ]]; then
          log "creating/updating the S3 user for access key '$S3_ACCESS_KEY_ID'"
          ensure_user
          sleep 0.5
        else
          die "bucket '$S3_BUCKET' exists but is not accessible with access key '$S3_ACCESS_KEY_ID'"
        fi
        ;;
      404)
        res="$(s3_py put-bucket)"
        code="${res%% *}"; err="${res#* }"
        case "$code" in
          200) log "created bucket '$S3_BUCKET'"; return 0 ;;
          403) [[ "$err" == InvalidAccessKeyId || "$err" == SignatureDoesNotMatch ]] && { ensure_user; sleep 0.5; continue; }
               die "PUT bucket '$S3_BUCKET': HTTP $code $err" ;;
          *) die "PUT bucket '$S3_BUCKET': HTTP $code $err" ;;
        esac
        ;;
      *) fail "HEAD bucket '$S3_BUCKET': unexpected answer '$res'" "$STATE/log/client.rgw.a.log" ;;
    esac
  done
  die "could not make bucket '$S3_BUCKET' usable with access key '$S3_ACCESS_KEY_ID'"
}

# ------------------------------------------------------------------ init ---
init_cluster() {
  local fsid osd_uuid id
  log "initialising a new single-node ceph cluster in $STATE"
  stop_all
  # only ever wipe a directory this script made (a half-done earlier init)
  if [[ -n "$(find "$STATE" -mindepth 1 -maxdepth 1 ! -name .lock -print -quit)" ]] &&
    ! grep -qs '^# Generated by infra/local/s3.sh' "$CONF"; then
    die "$STATE is not empty and was not made by s3.sh: refusing to wipe it"
  fi
  find "$STATE" -mindepth 1 -maxdepth 1 ! -name .lock -exec rm -rf {} +
  fsid="$(cat /proc/sys/kernel/random/uuid)"
  osd_uuid="$(cat /proc/sys/kernel/random/uuid)"
  write_conf "$fsid"
  echo "$S3_MON_PORT" >"$STATE/mon_port"

  monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$S3_MON_PORT]" "$STATE/monmap" >>"$STATE/log/init.log" 2>&1 ||
    fail "monmaptool failed" "$STATE/log/init.log"
  ceph-mon -c "$CONF" --mkfs -i a --monmap "$STATE/monmap" >>"$STATE/log/init.log" 2>&1 ||
    fail "ceph-mon --mkfs failed" "$STATE/log/init.log" "$STATE/log/mon.a.log"
  start_mon
  wait_for 30 mon_up || fail "monitor did not answer within 30 s" "$STATE/log/mon.a.log"

  id="$(ceph_cli osd new "$osd_uuid" 2>>"$STATE/log/init.log")" || fail "ceph osd new failed" "$STATE/log/init.log"
  [[ "$id" == 0 ]] || die "expected osd id 0, got '$id'"
  ceph-osd -c "$CONF" -i 0 --mkfs --osd-uuid "$osd_uuid" >>"$STATE/log/init.log" 2>&1 ||
    fail "ceph-osd --mkfs failed" "$STATE/log/init.log" "$STATE/log/osd.0.log"
  start_osd
  wait_for 60 osd_up || fail "OSD did not come up within 60 s" "$STATE/log/osd.0.log"

  start_rgw
  rgw_wait
  ensure_user
  ensure_user_and_bucket
  local res
  res="$(s3_py warm-up)"
  [[ "$res" == "200 -" ]] || fail "S3 warm-up (put/delete/multipart) failed: $res" "$STATE/log/client.rgw.a.log"
  date -u +%FT%TZ >"$STATE/initialised"
}

# ---------------------------------------------------------------- actions ---
do_start() {
  check_inputs
  ensure_installed
  mkdir -p "$STATE"
  exec 9>"$STATE/.lock"
  flock -w 120 9 || die "another s3.sh holds $STATE/.lock"
  # the monitor's address is baked into the cluster at creation: keep it
  if [[ -f "$STATE/initialised" && -s "$STATE/mon_port" ]]; then S3_MON_PORT="$(cat "$STATE/mon_port")"; fi

  if [[ -f "$STATE/initialised" ]] && pid_of client.rgw.a >/dev/null; then
    if [[ "$(conf_frontends)" == "$(rgw_frontends)" ]] && s3_answers && tls_answers; then
      ensure_user_and_bucket
      log "already running at $ENDPOINT$( ((S3_TLS_PORT == 0)) || echo " and $TLS_ENDPOINT")"
      return 0
    fi
    # a cluster made before the https listener, S3_PORT or S3_TLS_PORT changed, or a certificate to renew
    log "radosgw is not serving '$(rgw_frontends)' (yet): restarting radosgw"
    stop_daemons client.rgw.a
  fi
  if s3_answers && ! pid_of client.rgw.a >/dev/null; then
    # Another checkout's server (a git worktree of this repo, say): use it when it takes our keys.
    if [[ "$(s3_py get-service)" == 200* ]]; then
      log "an S3 server at $ENDPOINT, started elsewhere, accepts our access key; using it"
      local res; res="$(s3_py head-bucket)"
      if [[ "${res%% *}" == 404 ]]; then res="$(s3_py put-bucket)"; [[ "${res%% *}" == 200 ]] || die "PUT bucket '$S3_BUCKET': $res"; fi
      return 0
    fi
    die "port $S3_PORT already answers HTTP but not our radosgw (state $STATE); set S3_PORT or stop the other server"
  fi

  local t0=$SECONDS
  if [[ ! -f "$STATE/initialised" ]]; then
    init_cluster
  else
    # regenerate the conf (port / tuning may have changed); keep the fsid
    write_conf "$(sed -n 's/^fsid = //p' "$CONF")"
    : >"$STATE/log/start.log"
    start_mon
    start_osd
    start_rgw
    rgw_wait
    ensure_user_and_bucket
  fi
  log "running at $ENDPOINT (bucket '$S3_BUCKET', started in $((SECONDS - t0)) s, state $STATE)"
  ((S3_TLS_PORT == 0)) || log "and at $TLS_ENDPOINT (certificate from the CA $TLS_DIR/ca.pem)"
}

do_stop() {
  [[ -d "$STATE" ]] || { log "not initialised ($STATE)"; return 0; }
  exec 9>"$STATE/.lock"
  flock -w 120 9 || die "another s3.sh holds $STATE/.lock"
  stop_all
  log "stopped"
}

# "<free bytes> <disk bytes>" of the OSD, from its own counters (there is no ceph-mgr for `ceph df`).
osd_space() {
  pid_of osd.0 >/dev/null || return 1
  ceph --admin-daemon "$STATE/run/osd.0.asok" perf dump 2>/dev/null |
    python3 -c 'import json, sys; o = json.load(sys.stdin)["osd"]; print(o["stat_bytes_avail"], o["stat_bytes"])'
}

# radosgw frees a deleted object's space only when its garbage collector gets to it (rgw gc obj min wait
# + rgw gc processor period, about a minute): a run that writes and deletes many GiB fills the OSD faster
# than that, and a full OSD blocks every write. This frees it now.
do_reclaim() {
  [[ -f "$STATE/initialised" ]] && pid_of client.rgw.a >/dev/null || die "not running (state $STATE)"
  rgw_admin gc process --include-all >/dev/null 2>&1 || log "radosgw-admin gc process failed; space may come back later"
  osd_space || die "could not read the OSD's free space ($STATE/run/osd.0.asok)"
}

do_status() {
  local name pid free total ok=0
  for name in mon.a osd.0 client.rgw.a; do
    if pid="$(pid_of "$name")"; then
      printf '%-13s running  pid %-7s rss %s MiB\n' "$name" "$pid" "$(( $(awk '/^VmRSS/{print $2}' "/proc/$pid/status") / 1024 ))"
    else
      printf '%-13s stopped\n' "$name"
    fi
  done
  local space
  if space="$(osd_space)"; then
    read -r free total <<<"$space"
    printf 'disk          %s MiB free of %s MiB\n' "$((free / 1048576))" "$((total / 1048576))"
    # the monitor stops all writes when the OSD is 95 % full ("mon osd full ratio")
    if ((free * 100 < total * 6)); then
      echo "disk          nearly full: writes stop at 95 % (infra/local/s3.sh reclaim frees deleted objects now)"
      ok=1
    fi
  fi
  if s3_answers; then
    echo "s3            answering at $ENDPOINT (state $STATE)"
  else
    echo "s3            not answering at $ENDPOINT"
    ok=1
  fi
  if ((S3_TLS_PORT != 0)); then
    if tls_answers; then
      echo "s3 https      answering at $TLS_ENDPOINT (CA $TLS_DIR/ca.pem)"
    else
      echo "s3 https      not answering at $TLS_ENDPOINT with a certificate of $TLS_DIR/ca.pem"
      ok=1
    fi
  fi
  return $ok
}

case "${1:-}" in
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  reclaim) do_reclaim ;;
  restart) do_stop; do_start ;;
  *) echo "usage: $0 {start|stop|status|reclaim|restart}" >&2; exit 2 ;;
esac
