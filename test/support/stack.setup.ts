import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { E2E_PORT_BASE, PGBOUNCER_PORT, TOPOLOGY } from './env';
import { ensureBucket } from './s3';
import { Stack } from './stack';

const pgbouncer = (command: 'start' | 'stop') =>
  execFileSync('bash', [join(__dirname, '../ha/pgbouncer.sh'), command], {
    env: { ...process.env, UHP_PGBOUNCER_PORT: String(PGBOUNCER_PORT) },
    stdio: ['ignore', 'inherit', 'inherit'],
  });

/**
 * Starts the shared end-to-end stack once for all e2e files, and the PgBouncer every stack of the run
 * goes through when the topology has one (UHP_E2E_TOPOLOGY, see env.ts).
 */
export default async function setup() {
  await ensureBucket();
  if (TOPOLOGY !== 'single') pgbouncer('start');
  const stack = new Stack(E2E_PORT_BASE);
  await stack.start();
  return async () => {
    await stack.stop();
    if (TOPOLOGY !== 'single') pgbouncer('stop');
  };
}
