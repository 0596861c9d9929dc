import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate, MigrationError, readMigrations } from '../../libs/db/src/migrate/migrate';
import { waitForSchema } from '../../libs/db/src/migrate/wait';
import { TEST_DATABASE_URL } from '../support/env';

/**
 * The container's migration runner (libs/db/src/migrate) against the real Postgres, side by side with
 * the prisma CLI it replaces: both must read each other's `_prisma_migrations` rows.
 */
const run = promisify(execFile);
const ROOT = resolve(__dirname, '../..');
const MIGRATIONS = join(ROOT, 'libs/db/prisma/migrations');

const urlOf = (database: string) => {
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${database}`;
  return url.toString();
};
const admin = new pg.Pool({ connectionString: urlOf('postgres'), max: 1 });
const created: string[] = [];
const temps: string[] = [];

async function freshDatabase(): Promise<string> {
  const name = `uhp_migrate_${randomBytes(4).toString('hex')}`;
  await admin.query(`CREATE DATABASE "${name}"`);
  created.push(name);
  return urlOf(name);
}

async function rows(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      'SELECT id, checksum, migration_name, started_at, finished_at, logs, rolled_back_at, applied_steps_count FROM _prisma_migrations ORDER BY migration_name',
    );
    return rows;
  } finally {
    await client.end();
  }
}

async function sql(url: string, text: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(text);
  } finally {
    await client.end();
  }
}

/** The prisma CLI of the repository (prisma.config.ts: JS schema engine, pg adapter). */
async function prisma(url: string, ...args: string[]) {
  try {
    const { stdout, stderr } = await run(join(ROOT, 'node_modules/.bin/prisma'), args, {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: url },
      timeout: 50_000,
    });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failure = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failure.code ?? 1, output: `${failure.stdout ?? ''}${failure.stderr ?? ''}` };
  }
}

/** A copy of the real migrations folder to tamper with. */
async function migrationsCopy(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'uhp-migrations-'));
  temps.push(dir);
  await cp(MIGRATIONS, dir, { recursive: true });
  return dir;
}

afterAll(async () => {
  for (const name of created)
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
  await admin.end();
  for (const dir of temps) await rm(dir, { recursive: true, force: true });
});

describe('migration runner (libs/db/src/migrate)', () => {
  it('migrates an empty database, records rows as prisma does, and prisma migrate status agrees', async () => {
    const url = await freshDatabase();
    const local = await readMigrations(MIGRATIONS);
    const result = await migrate({ databaseUrl: url, migrationsDir: MIGRATIONS });
    expect(result.applied).toEqual(local.map((m) => m.name));

    const recorded = await rows(url);
    expect(recorded.map((r) => r.migration_name)).toEqual(local.map((m) => m.name));
    for (const [i, row] of recorded.entries()) {
      expect(row.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(row.checksum).toBe(local[i]!.checksum);
      expect(row.checksum).toMatch(/^[0-9a-f]{64}$/);
      expect(row.started_at).toBeInstanceOf(Date);
      expect(row.finished_at.getTime()).toBeGreaterThanOrEqual(row.started_at.getTime());
      expect(row.logs).toBeNull();
      expect(row.rolled_back_at).toBeNull();
      expect(row.applied_steps_count).toBe(1);
    }

    const status = await prisma(url, 'migrate', 'status');
    expect(status.output).toContain('Database schema is up to date');
    expect(status.code).toBe(0);

    expect((await migrate({ databaseUrl: url, migrationsDir: MIGRATIONS })).applied).toEqual([]);
  });

  it('applies nothing to a database migrated by prisma migrate deploy', async () => {
    const url = await freshDatabase();
    const deploy = await prisma(url, 'migrate', 'deploy');
    expect(deploy.code, deploy.output).toBe(0);
    const before = await rows(url);
    const result = await migrate({ databaseUrl: url, migrationsDir: MIGRATIONS });
    expect(result.applied).toEqual([]);
    expect(result.upToDate).toBe(before.length);
    expect(await rows(url)).toEqual(before);
  });

  it('lets two runners race on one database: each migration is applied once (advisory lock)', async () => {
    const url = await freshDatabase();
    const [a, b] = await Promise.all([
      migrate({ databaseUrl: url, migrationsDir: MIGRATIONS }),
      migrate({ databaseUrl: url, migrationsDir: MIGRATIONS }),
    ]);
    const local = await readMigrations(MIGRATIONS);
    expect([...a.applied, ...b.applied].sort()).toEqual(local.map((m) => m.name));
    expect((await rows(url)).length).toBe(local.length);
  });

  it('refuses when an applied migration was modified, is missing locally, or failed', async () => {
    const url = await freshDatabase();
    await migrate({ databaseUrl: url, migrationsDir: MIGRATIONS });
    const local = await readMigrations(MIGRATIONS);
    const first = local[0]!.name;
    const last = local.at(-1)!.name;

    const modified = await migrationsCopy();
    await writeFile(join(modified, first, 'migration.sql'), `${local[0]!.sql}\n-- edited\n`);
    await expect(migrate({ databaseUrl: url, migrationsDir: modified })).rejects.toThrow(
      new RegExp(`${first} was modified after it was applied`),
    );

    const missing = await migrationsCopy();
    await rm(join(missing, last), { recursive: true });
    await expect(migrate({ databaseUrl: url, migrationsDir: missing })).rejects.toThrow(
      new RegExp(`${last} is applied to the database but missing from the migrations folder`),
    );

    await sql(url, `UPDATE _prisma_migrations SET finished_at = NULL WHERE migration_name = '${last}'`);
    const failed = migrate({ databaseUrl: url, migrationsDir: MIGRATIONS });
    await expect(failed).rejects.toBeInstanceOf(MigrationError);
    await expect(failed).rejects.toThrow(new RegExp(`${last} failed or is still running`));
  });

  it('rolls a failing migration back whole and records nothing for it', async () => {
    const url = await freshDatabase();
    const dir = await migrationsCopy();
    await mkdir(join(dir, '99999999999999_broken'));
    await writeFile(
      join(dir, '99999999999999_broken', 'migration.sql'),
      'CREATE TABLE "half_done" (id int);\nSELECT no_such_function();\n',
    );
    await expect(migrate({ databaseUrl: url, migrationsDir: dir })).rejects.toThrow(
      /99999999999999_broken failed and was rolled back/,
    );
    const recorded = await rows(url);
    expect(recorded.map((r) => r.migration_name)).not.toContain('99999999999999_broken');
    expect(recorded.every((r) => r.finished_at !== null)).toBe(true);
    const table = await sql(url, "SELECT to_regclass('public.half_done') AS t");
    expect(table.rows[0].t).toBeNull();
  });

  it("--wait (the Deployments' init container) returns once a concurrent migrate has applied everything", async () => {
    const url = await freshDatabase();
    const lines: string[] = [];
    const waiting = waitForSchema({
      databaseUrl: url,
      migrationsDir: MIGRATIONS,
      timeoutMs: 30_000,
      intervalMs: 100,
      log: (line) => lines.push(line),
    });
    let settled = false;
    void waiting.finally(() => (settled = true)).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(settled).toBe(false);
    await migrate({ databaseUrl: url, migrationsDir: MIGRATIONS });
    await expect(waiting).resolves.toMatchObject({ waitedMs: expect.any(Number) });
    expect(lines[0]).toMatch(/^waiting for \d+ migration\(s\) the migrate Job applies: 20261202100000_init/);
    // Read-only: waiting created nothing in the empty database before migrate ran.
    expect(await waitForSchema({ databaseUrl: url, migrationsDir: MIGRATIONS, timeoutMs: 1000 })).toBeDefined();
  });

  it('--wait gives up with the reason when the migrations never come', async () => {
    const url = await freshDatabase();
    await expect(
      waitForSchema({ databaseUrl: url, migrationsDir: MIGRATIONS, timeoutMs: 600, intervalMs: 100 }),
    ).rejects.toThrow(/gave up after \d+ s, still waiting for \d+ migration\(s\).*kubectl get jobs/);
    const { rows } = await sql(url, "SELECT to_regclass('public._prisma_migrations') AS t");
    expect(rows[0].t).toBeNull();
  });

  it('main.js --wait exits 0 on a migrated database and 1, with the reason, on an empty one', async () => {
    const migrated = await freshDatabase();
    await migrate({ databaseUrl: migrated, migrationsDir: MIGRATIONS });
    // The built runner, as the image runs it (the integration tier builds first).
    const main = join(ROOT, 'dist/libs/db/src/migrate/main.js');
    const waitFor = (url: string) =>
      run(process.execPath, [main, '--wait'], {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: url, MIGRATE_WAIT_TIMEOUT_SECONDS: '1' },
        timeout: 30_000,
      });
    await expect(waitFor(migrated)).resolves.toMatchObject({
      stdout: expect.stringContaining('holds every migration'),
    });
    const failure = await waitFor(await freshDatabase()).catch((error: { code: number; stderr: string }) => error);
    expect(failure).toMatchObject({ code: 1, stderr: expect.stringContaining('gave up after') });
  });
});
