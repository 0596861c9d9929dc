import { existsSync, readFileSync } from 'node:fs';
import { E2E_PORT_BASE } from './env';
import { pollUntil } from './poll';
import { type ServiceName, Stack } from './stack';

/**
 * The shared e2e stack as the global setup started it (its ports and log files follow from its port
 * base and the topology), for a test that asks what each of its processes did.
 */
export const e2eStack = () => new Stack(E2E_PORT_BASE);

/** The JSON lines of a log file whose message is `msg`. */
function logLines(file: string, msg: string): Record<string, unknown>[] {
  if (!existsSync(file)) return [];
  const needle = `"msg":"${msg}"`;
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.includes(needle))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Per process of a service: the access-log lines (served or failed) of `method` on exactly `path`. */
export function requestsPerProcess(stack: Stack, name: ServiceName, method: string, path: string): number[] {
  return stack
    .logFiles(name)
    .map(
      (file) =>
        [...logLines(file, 'request'), ...logLines(file, 'request failed')].filter(
          (line) => line.method === method && line.path === path,
        ).length,
    );
}

/**
 * Waits until every process of the service has logged at least one `method` on `path` (a log line is
 * written when the response closes, a moment after the client saw it), and returns the counts.
 * With one process this asks only that it served one.
 */
export async function servedByEveryProcess(
  stack: Stack,
  name: ServiceName,
  method: string,
  path: string,
): Promise<number[]> {
  let counts: number[] = [];
  await pollUntil(
    async () => (counts = requestsPerProcess(stack, name, method, path)).every((n) => n > 0),
    `${method} ${path} served by every ${name}`,
    10_000,
  ).catch((error: Error) => {
    throw new Error(`${error.message}; requests per ${name}: ${counts.join(', ')}`);
  });
  return counts;
}

/** Per process of a service: the log lines `msg` whose field `key` is `value`. */
export function logLinesPerProcess(stack: Stack, name: ServiceName, msg: string, key: string, value: string) {
  return stack.logFiles(name).map((file) => logLines(file, msg).filter((line) => line[key] === value).length);
}

/** The /metrics text of each process of a service, each from its own port (not the balanced one). */
export function metricsPerProcess(stack: Stack, name: ServiceName): Promise<string[]> {
  return Promise.all(
    stack.replicaPorts(name).map(async (port) => (await fetch(`http://127.0.0.1:${port}/metrics`)).text()),
  );
}
