import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';

const ROOT = resolve(__dirname, '../../..');
const PG_BIN = (() => {
  const versions = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort() : [];
  if (versions.length === 0) throw new Error('PostgreSQL server binaries not found (apt-get install postgresql)');
  return `/usr/lib/postgresql/${versions[versions.length - 1]}/bin`;
})();

/** Postgres refuses to run as root: when we are root, its commands run as the `postgres` user. */
function asPostgres(command: string, args: string[]): { status: number | null; output: string } {
  const argv = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--', command, ...args] : [command, ...args];
  // From `/`: the postgres user may not enter the working directory (a checkout under /root).
  const run = spawnSync(argv[0], argv.slice(1), { cwd: '/', encoding: 'utf8', timeout: 60_000 });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/**
 * A PostgreSQL cluster of the fault tier's own (initdb/pg_ctl of the installed server, on its own port): the
 * shared server on 5432 serves other checkouts and CI, so it is never stopped; this one is. Its files live in
 * the system's temporary directory, not the checkout's .data/: the postgres user it runs as must enter them,
 * and a checkout under /root is closed to every other user.
 */
export class PrivatePostgres {
  readonly dir: string;
  readonly database = 'uhp_faults';

  constructor(readonly port: number) {
    this.dir = join(tmpdir(), `uhp-faults-pg-${port}`);
  }

  get url(): string {
    return `postgresql://postgres@127.0.0.1:${this.port}/${this.database}`;
  }

  /** A fresh cluster with the database, migrated as operators do it (`prisma migrate deploy`). */
  async create(): Promise<void> {
    this.stop('immediate');
    rmSync(this.dir, { recursive: true, force: true });
    mkdirSync(this.dir, { recursive: true });
    if (process.getuid?.() === 0) execFileSync('chown', ['-R', 'postgres:postgres', this.dir]);
    const init = asPostgres(`${PG_BIN}/initdb`, [
      '-D',
      join(this.dir, 'data'),
      '-U',
      'postgres',
      '-A',
      'trust',
      '--no-sync',
    ]);
    if (init.status !== 0) throw new Error(`initdb failed: ${init.output}`);
    writeFileSync(
      join(this.dir, 'data', 'postgresql.auto.conf'),
      [
        `port = ${this.port}`,
        `listen_addresses = '127.0.0.1'`,
        `unix_socket_directories = '${this.dir}'`,
        'fsync = off',
        'synchronous_commit = off',
        'full_page_writes = off',
        'max_connections = 60',
        'shared_buffers = 32MB',
      ].join('\n') + '\n',
    );
    if (process.getuid?.() === 0)
      chownSync(join(this.dir, 'data', 'postgresql.auto.conf'), uid('postgres'), gid('postgres'));
    this.start();
    const admin = new pg.Client({ connectionString: `postgresql://postgres@127.0.0.1:${this.port}/postgres` });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${this.database}`);
    await admin.end();
    const migrate = spawnSync('npx', ['prisma', 'migrate', 'deploy'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: this.url },
      encoding: 'utf8',
    });
    if (migrate.status !== 0) throw new Error(`prisma migrate deploy failed: ${migrate.stdout}${migrate.stderr}`);
  }

  start(): void {
    const run = asPostgres(`${PG_BIN}/pg_ctl`, [
      '-D',
      join(this.dir, 'data'),
      '-l',
      join(this.dir, 'log'),
      '-w',
      'start',
    ]);
    if (run.status !== 0) throw new Error(`pg_ctl start failed: ${run.output}`);
  }

  /** `fast`: a clean stop that cuts every session; `immediate`: as a crash would. */
  stop(mode: 'fast' | 'immediate' = 'fast'): void {
    if (!existsSync(join(this.dir, 'data', 'postmaster.pid'))) return;
    asPostgres(`${PG_BIN}/pg_ctl`, ['-D', join(this.dir, 'data'), '-m', mode, '-w', 'stop']);
  }

  /** pg_terminate_backend on every session of the services' database: what a failover or an admin does. */
  async terminateBackends(): Promise<number> {
    const admin = new pg.Client({ connectionString: `postgresql://postgres@127.0.0.1:${this.port}/postgres` });
    await admin.connect();
    try {
      const { rows } = await admin.query(
        `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n FROM pg_stat_activity
          WHERE datname = $1 AND pid <> pg_backend_pid()`,
        [this.database],
      );
      return Number(rows[0].n);
    } finally {
      await admin.end();
    }
  }

  destroy(): void {
    this.stop('immediate');
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function uid(user: string): number {
  return Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
}
function gid(user: string): number {
  return Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }).trim());
}
