# S3 stand-in for MinIO (tests only; see ../standins.sh): Debian's Ceph radosgw as a one-node cluster
# (one monitor, one memstore OSD, radosgw on :9000), the recipe of infra/local/s3.sh. It takes MinIO's
# credentials variables (MINIO_ROOT_USER / MINIO_ROOT_PASSWORD) and becomes ready (`s3-tool ready`)
# once that key works. Objects live in memory: a restart starts empty. `s3-tool mb BUCKET` creates a
# bucket (the stand-in for `mc mb --ignore-existing`).
ARG BASE
FROM ${BASE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends ceph-mon ceph-osd radosgw python3 \
 && rm -rf /var/lib/apt/lists/*
COPY s3-entrypoint.sh /usr/local/bin/s3-entrypoint.sh
COPY s3-tool.py /usr/local/bin/s3-tool
EXPOSE 9000
ENTRYPOINT ["/usr/local/bin/s3-entrypoint.sh"]
