#!/bin/bash
# What process isolation a preview converter can get inside this container. Runs inside the worker
# image (test/containers/isolation/run.sh runs it under several security settings) and prints one line
# per probe: `ok`, or `FAIL (exit N): <first line of its stderr>`.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
W="$(mktemp -d /tmp/probe.XXXXXX)"
export HOME="$W"
WIDTH="${PROBE_WIDTH:-200}"

probe() { # probe NAME CMD...
  local name="$1"; shift
  local out rc
  out="$(timeout 60 "$@" 2>&1 >/dev/null </dev/null)"; rc=$?
  if ((rc == 0)); then printf '  %-64s ok\n' "$name"
  else printf '  %-64s FAIL (exit %s): %s\n' "$name" "$rc" "$(printf '%s' "$out" | grep -v '^\s*$' | head -n 1 | cut -c1-"$WIDTH")"; fi
}

# Raw syscalls through python3 (in the worker image for python3-uno), to see the errno itself.
cat >"$W/unshare.py" <<'PY'
import ctypes, os, sys
flags = {"CLONE_NEWUSER": 0x10000000, "CLONE_NEWNET": 0x40000000}
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(flags[sys.argv[1]]) != 0:
    e = ctypes.get_errno(); sys.exit(f"unshare({sys.argv[1]}): errno {e} {os.strerror(e)}")
PY
cat >"$W/landlock.py" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
v = libc.syscall(444, None, 0, 1)  # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
if v < 0:
    e = ctypes.get_errno(); sys.exit(f"landlock_create_ruleset: errno {e} {os.strerror(e)}")
print(f"landlock ABI {v}", file=sys.stderr)
PY
net_attempt='fetch("http://1.1.1.1/", {signal: AbortSignal.timeout(3000)}).then(() => process.exit(0), (e) => { console.error(String(e.cause?.code ?? e.cause ?? e)); process.exit(3); })'
echo '<h1>probe</h1>' >"$W/in.html"
printf 'probe\n' >"$W/in.txt"

echo "== $(id) ($(uname -r))"
grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | tr '\t' ' ' | sed 's/^/  /'
echo "== namespaces (the sandbox today: unshare --net, plus --map-root-user when not root)"
probe 'unshare --net true' unshare --net true
probe 'unshare --map-root-user --net true (sandbox.ts as uid 1000)' unshare --map-root-user --net true
probe 'unshare --user true' unshare --user true
probe 'unshare --user --map-root-user --net --mount --pid --fork true' unshare --user --map-root-user --net --mount --pid --fork true
probe 'syscall unshare(CLONE_NEWUSER)' python3 "$W/unshare.py" CLONE_NEWUSER
probe 'syscall unshare(CLONE_NEWNET)' python3 "$W/unshare.py" CLONE_NEWNET
echo "== confinement without namespaces"
probe 'prlimit --core=0 --as=1073741824 true' prlimit --core=0 --as=1073741824 true
probe 'setpriv --no-new-privs --inh-caps=-all true' setpriv --no-new-privs --inh-caps=-all true
printf '  %-64s %s\n' 'landlock_create_ruleset (per-process filesystem rules)' "$(python3 "$W/landlock.py" 2>&1 | head -n 1)"
probe 'seccomp-nonet.py true (a seccomp filter of its own)' python3 "$HERE/seccomp-nonet.py" true
probe 'node fetch http://1.1.1.1 (no filter)' node -e "$net_attempt"
probe 'seccomp-nonet.py node fetch http://1.1.1.1' python3 "$HERE/seccomp-nonet.py" node -e "$net_attempt"
echo "== converters"
CHROMIUM=(chromium --headless --disable-gpu --disable-dev-shm-usage --no-first-run --user-data-dir="$W/chromium" --print-to-pdf="$W/out.pdf" "file://$W/in.html")
probe 'chromium --headless (its own sandbox)' "${CHROMIUM[@]}"
probe 'chromium --headless --no-sandbox' "${CHROMIUM[@]}" --no-sandbox
rm -f "$W/out.pdf"
probe 'seccomp-nonet.py chromium --headless --no-sandbox' python3 "$HERE/seccomp-nonet.py" "${CHROMIUM[@]}" --no-sandbox
probe '  … wrote a PDF' sh -c "head -c 5 '$W/out.pdf' | grep -q '%PDF-'"
SOFFICE=(soffice --headless --norestore "-env:UserInstallation=file://$W/lo" --convert-to pdf --outdir "$W/lo-out" "$W/in.txt")
probe 'soffice --convert-to pdf' "${SOFFICE[@]}"
rm -rf "$W/lo-out"
probe 'seccomp-nonet.py soffice --convert-to pdf' python3 "$HERE/seccomp-nonet.py" "${SOFFICE[@]}"
probe '  … wrote a PDF' test -s "$W/lo-out/in.pdf"
echo "== Landlock: a converter kept to its own job's directory (landlock-jail.py)"
JAIL=(python3 "$HERE/landlock-jail.py" "$W/job-a")
mkdir -p "$W/job-a/out" "$W/job-b"
echo 'job b only' >"$W/job-b/secret.txt"
cp "$W/in.txt" "$W/in.html" "$W/job-a/"
probe 'jail: cat job-a/in.txt (its own)' "${JAIL[@]}" cat "$W/job-a/in.txt"
probe 'jail: cat job-b/secret.txt (expected FAIL)' "${JAIL[@]}" cat "$W/job-b/secret.txt"
probe 'jail: ls /app (expected FAIL)' "${JAIL[@]}" ls /app
probe 'jail: node fetch http://1.1.1.1 (expected FAIL: TCP connect)' "${JAIL[@]}" node -e "$net_attempt"
probe 'jail: soffice --convert-to pdf in job-a' env HOME="$W/job-a" TMPDIR="$W/job-a" "${JAIL[@]}" soffice --headless --norestore \
  "-env:UserInstallation=file://$W/job-a/lo" --convert-to pdf --outdir "$W/job-a/out" "$W/job-a/in.txt"
probe '  … wrote a PDF' test -s "$W/job-a/out/in.pdf"
probe 'jail: chromium --no-sandbox --print-to-pdf in job-a' env HOME="$W/job-a" TMPDIR="$W/job-a" "${JAIL[@]}" chromium --headless --no-sandbox \
  --disable-gpu --disable-dev-shm-usage --no-first-run --user-data-dir="$W/job-a/chromium" --print-to-pdf="$W/job-a/out/html.pdf" "file://$W/job-a/in.html"
probe '  … wrote a PDF' sh -c "head -c 5 '$W/job-a/out/html.pdf' | grep -q '%PDF-'"
LAUNCHER=/app/dist/apps/worker/src/previews/sandbox/confine.py
if [ -f "$LAUNCHER" ]; then
  echo "== the worker's launcher in the container's mode (seccomp + Landlock): what a converter reaches"
  mkdir -p "$W/own" "$W/other" && echo 'another job' >"$W/other/file" && chmod 700 "$W/other"
  printf '  %s\n' "$(python3 -I -S "$LAUNCHER" --landlock --rw "$W/own" --no-tcp --seccomp-nonet \
    --self-test --canary "$W/other/file" --own "$W/own" -- true 2>&1 | head -n 1)"
fi
if command -v bwrap >/dev/null; then
  echo "== bubblewrap $(bwrap --version 2>&1)"
  probe 'bwrap --unshare-net --ro-bind / / true' bwrap --unshare-net --ro-bind / / true
  probe 'bwrap --unshare-user --unshare-net --ro-bind / / true' bwrap --unshare-user --unshare-net --ro-bind / / true
fi
rm -rf "$W"
