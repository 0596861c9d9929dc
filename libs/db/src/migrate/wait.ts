import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { MigrationError, readMigrations, splitSchema, type AppliedMigration, type LocalMigration } from './migrate';

/**
 * `main.js --wait`: the init container of every Deployment in the chart's `migrate.mode: job`. Under Flux or
 * `kubectl apply` nothing orders the Deployments after the migrate Job, so a new pod waits here until the
 * database holds every migration its image was built with. Read-only: it takes no lock and creates nothing.
 */

/**
 * The local migrations the database does not hold yet: no row, a row still unfinished, rolled back, or applied
 * with another checksum. Migrations the database has beyond the folder (a newer release) do not matter here.
 */
export function missingMigrations(local: readonly LocalMigration[], applied: readonly AppliedMigration[]): string[] {
  const done = new Set(
    applied
      .filter((row) => row.finished_at !== null && row.rolled_back_at === null)
      .map((row) => `${row.migration_name}\n${row.checksum}`),
  );
  return local.filter((m) => !done.has(`${m.name}\n${m.checksum}`)).map((m) => m.name);
}

export interface WaitOptions {
  databaseUrl: string;
  migrationsDir: string;
  /** Give up after this long (MigrationError). */
  timeoutMs: number;
  intervalMs?: number;
  log?: (line: string) => void;
}

const UNDEFINED_TABLE = '42P01';

async function appliedRows(databaseUrl: string): Promise<AppliedMigration[]> {
  const { connectionString, schema } = splitSchema(databaseUrl);
  const client = new pg.Client({ connectionString, application_name: 'uhp-migrate-wait' });
  await client.connect();
  try {
    const table = `"${schema.replace(/"/g, '""')}"."_prisma_migrations"`;
    const { rows } = await client.query<AppliedMigration>(
      `SELECT migration_name, checksum, finished_at, rolled_back_at FROM ${table}`,
    );
    return rows;
  } catch (error) {
    if ((error as { code?: string }).code === UNDEFINED_TABLE) return [];
    throw error;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Resolves when the database holds every local migration; polls, logging each change of what it waits for. */
export async function waitForSchema(options: WaitOptions): Promise<{ waitedMs: number }> {
  const log = options.log ?? (() => undefined);
  const interval = options.intervalMs ?? 2000;
  const local = await readMigrations(options.migrationsDir);
  const started = Date.now();
  let lastState = '';
  for (;;) {
    let state: string;
    try {
      const missing = missingMigrations(local, await appliedRows(options.databaseUrl));
      if (missing.length === 0) return { waitedMs: Date.now() - started };
      state = `waiting for ${missing.length} migration(s) the migrate Job applies: ${missing.join(', ')}`;
    } catch (error) {
      state = `waiting for the database: ${error instanceof Error ? error.message : String(error)}`;
    }
    if (state !== lastState) log(state);
    lastState = state;
    if (Date.now() - started + interval > options.timeoutMs)
      throw new MigrationError(
        `gave up after ${Math.round((Date.now() - started) / 1000)} s, still ${state}; ` +
          'is the migrate Job running (kubectl get jobs), and did it fail (kubectl logs job/<name>)?',
      );
    await sleep(interval);
  }
}
