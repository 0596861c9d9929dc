#!/usr/bin/python3
"""Signed S3 requests for the S3 stand-in (python3 standard library only, AWS SigV4).

  s3-tool get-service-any   exit 0 when anything answers HTTP at the endpoint
  s3-tool ready             exit 0 when the key lists buckets
  s3-tool mb BUCKET         create the bucket unless it exists (like `mc mb --ignore-existing`)

Endpoint S3_ENDPOINT (default http://127.0.0.1:9000); key MINIO_ROOT_USER / MINIO_ROOT_PASSWORD, or
S3_ACCESS_KEY_ID / S3_SECRET_ACCESS_KEY.
"""
import datetime, hashlib, hmac, os, sys, urllib.error, urllib.parse, urllib.request

endpoint = urllib.parse.urlsplit(os.environ.get("S3_ENDPOINT", "http://127.0.0.1:9000"))
host = endpoint.netloc
ak = os.environ.get("MINIO_ROOT_USER") or os.environ.get("S3_ACCESS_KEY_ID", "")
sk = os.environ.get("MINIO_ROOT_PASSWORD") or os.environ.get("S3_SECRET_ACCESS_KEY", "")
region = os.environ.get("S3_REGION", "us-east-1")


def req(method, path):
    now = datetime.datetime.now(datetime.timezone.utc)
    amzdate, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    ph = hashlib.sha256(b"").hexdigest()
    hd = {"host": host, "x-amz-content-sha256": ph, "x-amz-date": amzdate}
    signed = ";".join(sorted(hd))
    canon = "\n".join([method, urllib.parse.quote(path, safe="/-_.~"), "", "".join(f"{k}:{hd[k]}\n" for k in sorted(hd)), signed, ph])
    scope = f"{day}/{region}/s3/aws4_request"
    sts = "\n".join(["AWS4-HMAC-SHA256", amzdate, scope, hashlib.sha256(canon.encode()).hexdigest()])
    k = ("AWS4" + sk).encode()
    for part in (day, region, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    h = {x: y for x, y in hd.items() if x != "host"}
    h["Authorization"] = f"AWS4-HMAC-SHA256 Credential={ak}/{scope}, SignedHeaders={signed}, Signature={sig}"
    r = urllib.request.Request(f"{endpoint.scheme}://{host}{urllib.parse.quote(path, safe='/-_.~')}", method=method, headers=h,
                               data=b"" if method == "PUT" else None)
    try:
        with urllib.request.urlopen(r, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    try:
        if cmd == "get-service-any":
            try:
                urllib.request.urlopen(f"{endpoint.scheme}://{host}/", timeout=3)
            except urllib.error.HTTPError:
                pass
            return 0
        if cmd == "ready":
            return 0 if req("GET", "/") == 200 else 1
        if cmd == "mb" and len(argv) == 3:
            bucket = argv[2]
            status = req("HEAD", f"/{bucket}")
            if status == 200:
                print(f"bucket {bucket} exists")
                return 0
            status = req("PUT", f"/{bucket}")
            print(f"bucket {bucket}: created" if status == 200 else f"PUT bucket {bucket}: HTTP {status}")
            return 0 if status == 200 else 1
    except OSError as e:
        print(f"s3-tool {cmd}: {e}", file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


sys.exit(main(sys.argv))
