import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import pg from 'pg';

/**
 * A migration runner that applies `libs/db/prisma/migrations/<name>/migration.sql` the way
 * `prisma migrate deploy` does, without the prisma CLI (the migrate image must not carry it, and the
 * CLI lingers idle before it exits, which every pod waiting on migrations would pay). It records every
 * migration in Prisma's own `_prisma_migrations` table with the same values, so the CLI and this runner can
 * take turns on one database: `prisma migrate status` agrees with it, and `prisma migrate deploy` after it
 * applies nothing.
 *
 * - in name order, each migration in a transaction of its own together with its row; a migration that
 *   fails rolls back and leaves no row, so it can be fixed and run again;
 * - under Prisma's own advisory lock (the same key), so two runners, or a runner and the CLI, never
 *   apply at the same time;
 * - refuses to apply anything when the database disagrees with the folder: an applied migration whose
 *   file changed (checksum), an applied migration missing from the folder, or a failed one (a row
 *   without finished_at, left by the CLI). Rows marked rolled back (`prisma migrate resolve
 *   --rolled-back`) are ignored, as the CLI ignores them.
 */

/** Prisma's key for `pg_advisory_lock` (schema-engine, postgres connector): one migrator at a time. */
export const PRISMA_ADVISORY_LOCK_KEY = 72707369;

/** The DDL the Prisma schema engine runs when `_prisma_migrations` does not exist (Postgres). */
export const PRISMA_MIGRATIONS_TABLE_DDL = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

export interface LocalMigration {
  name: string;
  /** sha256 hex of the file's bytes: what Prisma stores as `checksum`. */
  checksum: string;
  sql: string;
}

export interface AppliedMigration {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
}

export class MigrationError extends Error {
  override readonly name = 'MigrationError';
}

export const checksumOf = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** The migration folders in name order; files and folders without a migration.sql are skipped, as Prisma does. */
export async function readMigrations(dir: string): Promise<LocalMigration[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
    throw new MigrationError(`cannot read the migrations folder ${dir}: ${error.message}`);
  });
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  const migrations: LocalMigration[] = [];
  for (const name of names) {
    const file = join(dir, name, 'migration.sql');
    if (!existsSync(file)) continue;
    const bytes = await readFile(file);
    migrations.push({ name, checksum: checksumOf(bytes), sql: bytes.toString('utf8') });
  }
  return migrations;
}

/**
 * What to apply, or why nothing may be applied. Pure: the local folder against the table's rows.
 * Every problem is listed, not just the first.
 */
export function planMigrations(
  local: readonly LocalMigration[],
  applied: readonly AppliedMigration[],
): LocalMigration[] {
  const problems: string[] = [];
  const localByName = new Map(local.map((m) => [m.name, m]));
  const live = applied.filter((row) => row.rolled_back_at === null);
  const done = new Set<string>();
  for (const row of live) {
    const mine = localByName.get(row.migration_name);
    if (row.finished_at === null) {
      problems.push(
        `migration ${row.migration_name} failed or is still running (finished_at is null); resolve it first ` +
          `(prisma migrate resolve --rolled-back ${row.migration_name}, after fixing the database)`,
      );
    } else if (!mine) {
      problems.push(
        `migration ${row.migration_name} is applied to the database but missing from the migrations folder`,
      );
    } else if (mine.checksum !== row.checksum) {
      problems.push(
        `migration ${row.migration_name} was modified after it was applied ` +
          `(checksum ${row.checksum} in the database, ${mine.checksum} in the folder)`,
      );
    }
    done.add(row.migration_name);
  }
  if (problems.length > 0) throw new MigrationError(`refusing to migrate:\n  - ${problems.join('\n  - ')}`);
  return local.filter((m) => !done.has(m.name));
}

/**
 * Prisma accepts `?schema=name` in the URL (the search path); pg does not know that parameter.
 * Returns the URL without it and the schema (default public).
 */
export function splitSchema(databaseUrl: string): { connectionString: string; schema: string } {
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch {
    throw new MigrationError('DATABASE_URL is not a URL');
  }
  const schema = url.searchParams.get('schema') ?? 'public';
  url.searchParams.delete('schema');
  return { connectionString: url.toString(), schema };
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

export interface MigrateOptions {
  databaseUrl: string;
  migrationsDir: string;
  log?: (line: string) => void;
}

export interface MigrateResult {
  applied: string[];
  /** Migrations the database already had. */
  upToDate: number;
}

/** Applies the pending migrations. Throws MigrationError (refusal or a failed migration) or a connection error. */
export async function migrate(options: MigrateOptions): Promise<MigrateResult> {
  const log = options.log ?? (() => undefined);
  const local = await readMigrations(options.migrationsDir);
  const { connectionString, schema } = splitSchema(options.databaseUrl);
  const client = new pg.Client({ connectionString, application_name: 'uhp-migrate' });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
    await client.query(`SET search_path TO ${quoteIdent(schema)}`);
    await client.query('SELECT pg_advisory_lock($1)', [PRISMA_ADVISORY_LOCK_KEY]);
    try {
      await client.query(PRISMA_MIGRATIONS_TABLE_DDL);
      const { rows } = await client.query<AppliedMigration>(
        'SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations" ' +
          'ORDER BY started_at, migration_name',
      );
      const pending = planMigrations(local, rows);
      const applied: string[] = [];
      for (const migration of pending) {
        const started = Date.now();
        await client.query('BEGIN');
        try {
          await client.query(
            'INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count) ' +
              'VALUES ($1, $2, $3, clock_timestamp(), 0)',
            [randomUUID(), migration.checksum, migration.name],
          );
          await client.query(migration.sql);
          await client.query(
            'UPDATE "_prisma_migrations" SET finished_at = clock_timestamp(), applied_steps_count = 1 ' +
              'WHERE migration_name = $1 AND finished_at IS NULL AND rolled_back_at IS NULL',
            [migration.name],
          );
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK').catch(() => undefined);
          const message = error instanceof Error ? error.message : String(error);
          throw new MigrationError(
            `migration ${migration.name} failed and was rolled back (nothing of it is applied): ${message}`,
            { cause: error },
          );
        }
        applied.push(migration.name);
        log(`applied ${migration.name} (${Date.now() - started} ms)`);
      }
      return { applied, upToDate: local.length - pending.length };
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [PRISMA_ADVISORY_LOCK_KEY]).catch(() => undefined);
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The migrations folder: MIGRATIONS_DIR, else the first `libs/db/prisma/migrations` found walking up
 * from `start` (the repository in development, /app in the image).
 */
export function findMigrationsDir(start: string, env: NodeJS.ProcessEnv = process.env): string {
  if (env.MIGRATIONS_DIR) return resolve(env.MIGRATIONS_DIR);
  for (let dir = resolve(start); ; dir = dirname(dir)) {
    const candidate = join(dir, 'libs', 'db', 'prisma', 'migrations');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir)
      throw new MigrationError(`no libs/db/prisma/migrations above ${start}; set MIGRATIONS_DIR`);
  }
}
