import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { E2E_PORT_BASE, PGBOUNCER_PORT, TEST_DATABASE_URL, TOPOLOGY } from './env';
import { ensureBucket } from './s3';
import { Stack } from './stack';

const pgbouncer = (command: 'start' | 'stop') =>
  execFileSync('bash', [join(__dirname, '../ha/pgbouncer.sh'), command], {
    env: { ...process.env, UHP_PGBOUNCER_PORT: String(PGBOUNCER_PORT) },
    stdio: ['ignore', 'inherit', 'inherit'],
  });

/** Clients PgBouncer serves on the test database (its admin console), so a run cannot pass around it. */
async function pgbouncerClients(): Promise<number> {
  const admin = new pg.Client({ host: '127.0.0.1', port: PGBOUNCER_PORT, user: 'postgres', database: 'pgbouncer' });
  await admin.connect();
  try {
    const { rows } = await admin.query('SHOW CLIENTS');
    return rows.filter((row) => row.database === new URL(TEST_DATABASE_URL).pathname.slice(1)).length;
  } finally {
    await admin.end();
  }
}

/**
 * Starts the shared end-to-end stack once for all e2e files, and the PgBouncer every stack of the run
 * goes through when the topology has one (UHP_E2E_TOPOLOGY, see env.ts).
 */
export default async function setup() {
  await ensureBucket();
  if (TOPOLOGY !== 'single') pgbouncer('start');
  const stack = new Stack(E2E_PORT_BASE);
  await stack.start();
  if (TOPOLOGY !== 'single' && (await pgbouncerClients()) === 0)
    throw new Error(`UHP_E2E_TOPOLOGY=${TOPOLOGY}, but no service reaches Postgres through PgBouncer`);
  return async () => {
    await stack.stop();
    if (TOPOLOGY !== 'single') pgbouncer('stop');
  };
}
