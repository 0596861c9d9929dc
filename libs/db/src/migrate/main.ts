/**
 * `node dist/libs/db/src/migrate/main.js`: apply the pending migrations to DATABASE_DIRECT_URL, or DATABASE_URL
 * when it is unset, then exit.
 * Exit status 0 when the database is up to date, 1 when a migration failed or the database disagrees
 * with the migrations folder (see migrate.ts), 2 when both are missing. Lines go to stdout
 * (progress) and stderr (the reason for a failure). Only `pg` and Node are needed at run time.
 *
 * `main.js --wait` applies nothing: it exits 0 once the database holds every migration of this image
 * (wait.ts), 1 after MIGRATE_WAIT_TIMEOUT_SECONDS (default 900) without.
 */
import { findMigrationsDir, migrate, MigrationError } from './migrate';
import { waitForSchema } from './wait';

const DEFAULT_WAIT_SECONDS = 900;

function waitTimeoutMs(): number {
  const raw = process.env.MIGRATE_WAIT_TIMEOUT_SECONDS;
  const seconds = raw === undefined || raw === '' ? DEFAULT_WAIT_SECONDS : Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new MigrationError(`MIGRATE_WAIT_TIMEOUT_SECONDS must be a positive number of seconds, got "${raw}"`);
  return seconds * 1000;
}

async function main(): Promise<number> {
  // Migrations hold a session advisory lock, which a pooler in transaction mode cannot keep: the direct URL first.
  const databaseUrl = process.env.DATABASE_DIRECT_URL || process.env.DATABASE_URL;
  if (!databaseUrl) {
    process.stderr.write('migrate: DATABASE_URL is not set (nor DATABASE_DIRECT_URL)\n');
    return 2;
  }
  const say = (line: string) => process.stdout.write(`migrate: ${line}\n`);
  try {
    const migrationsDir = findMigrationsDir(__dirname);
    if (process.argv.includes('--wait')) {
      const { waitedMs } = await waitForSchema({ databaseUrl, migrationsDir, timeoutMs: waitTimeoutMs(), log: say });
      say(`the database holds every migration of this release (waited ${Math.round(waitedMs / 1000)} s)`);
      return 0;
    }
    const result = await migrate({ databaseUrl, migrationsDir, log: say });
    say(
      result.applied.length === 0
        ? `database is up to date (${result.upToDate} migrations applied earlier)`
        : `${result.applied.length} migration(s) applied, ${result.upToDate} were already applied`,
    );
    return 0;
  } catch (error) {
    const message =
      error instanceof MigrationError
        ? error.message
        : `cannot migrate: ${error instanceof Error ? error.message : String(error)}`;
    process.stderr.write(`migrate: ${message}\n`);
    return 1;
  }
}

void main().then((code) => {
  process.exitCode = code;
});
