import pg from 'pg';
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
