import { join } from 'node:path';
import pg from 'pg';
import { migrate } from '@app/db/migrate';
import { TEST_DATABASE_URL } from './env';

/** Raw SQL on the test database, for asserting what the services left behind. */
export const db = new pg.Pool({ connectionString: TEST_DATABASE_URL, max: 2 });

export async function count(sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await db.query(sql, params);
  return Number(Object.values(rows[0])[0]);
}

/** The database's clock, to ask later what rows appeared after this moment. */
export async function dbNow(): Promise<Date> {
  const { rows } = await db.query('SELECT now() AS now');
  return rows[0].now as Date;
}

/** Stored-object rows and file rows made since `since`: what a rejected request must not leave. */
export async function leftoversSince(since: Date): Promise<{ objects: number; files: number; containerFiles: number }> {
  return {
    objects: await count('SELECT count(*) FROM stored_objects WHERE created_at >= $1', [since]),
    files: await count('SELECT count(*) FROM files WHERE created_at >= $1', [since]),
    containerFiles: await count('SELECT count(*) FROM container_files WHERE created_at >= $1', [since]),
  };
}

/**
 * A database of its own for a test that must not share the test database's rows (keys it revokes,
 * converter states it needs absent): created empty and migrated with our runner; `drop` removes it.
 */
export async function scratchDatabase(suffix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const url = `${TEST_DATABASE_URL}_${suffix}`;
  const name = new URL(url).pathname.slice(1);
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  await migrate({
    databaseUrl: url,
    migrationsDir: join(__dirname, '../../libs/db/prisma/migrations'),
    log: () => undefined,
  });
  return {
    url,
    async drop() {
      const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}
