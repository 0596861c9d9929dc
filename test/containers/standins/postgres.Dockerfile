# Stand-in for postgres:16 (tests only; see ../standins.sh). Debian bookworm ships PostgreSQL 15, so it
# is tagged 15. The entrypoint honours the official image's interface: POSTGRES_USER, POSTGRES_PASSWORD,
# POSTGRES_DB, PGDATA=/var/lib/postgresql/data, password auth over TCP, pg_isready in the PATH; it starts
# as root, fixes the data directory's owner and drops to the postgres user (CHOWN, FOWNER, SETUID, SETGID).
ARG BASE
FROM ${BASE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 postgresql-client-15 \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
ENV PATH=/usr/lib/postgresql/15/bin:$PATH \
    PGDATA=/var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
VOLUME /var/lib/postgresql/data
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["postgres"]
