import { setTimeout as sleep } from 'node:timers/promises';

/** Polls until `probe` returns a truthy value or the time is up (then fails with what it saw last). */
export async function pollUntil<T>(
  probe: () => Promise<T>,
  what: string,
  timeoutMs = 30_000,
  everyMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await probe();
    if (last) return last;
    await sleep(everyMs);
  }
  throw new Error(`${what}: still not true after ${timeoutMs} ms (last: ${JSON.stringify(last)})`);
}
