# Stand-in for redis:7 (tests only; see ../standins.sh): Debian bookworm's redis-server 7.0 as user
# redis = 999:999 with /data as its working directory, like the official image. Like the official
# entrypoint, `redis-server …` without a config file gets `--protected-mode no` (else Redis refuses
# every client that is not on loopback when no password is set).
ARG BASE
FROM ${BASE}
RUN groupadd --system --gid 999 redis \
 && useradd --system --uid 999 --gid redis --home-dir /data --no-create-home redis \
 && apt-get update \
 && apt-get install -y --no-install-recommends redis-server redis-tools \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data && chown redis:redis /data \
 && printf '%s\n' '#!/bin/sh' \
      'if [ "$1" = redis-server ] && ! printf "%s\n" "$@" | grep -q -- "--protected-mode"; then shift; set -- redis-server --protected-mode no "$@"; fi' \
      'exec "$@"' >/usr/local/bin/docker-entrypoint.sh \
 && chmod 0755 /usr/local/bin/docker-entrypoint.sh
WORKDIR /data
VOLUME /data
EXPOSE 6379
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["redis-server"]
