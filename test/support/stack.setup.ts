import { E2E_PORT_BASE } from './env';
import { ensureBucket } from './s3';
import { Stack } from './stack';

/** Starts the shared end-to-end stack once for all e2e files. */
export default async function setup() {
  await ensureBucket();
  const stack = new Stack(E2E_PORT_BASE);
  await stack.start();
  return async () => stack.stop();
}
