import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * The compose stack of `npm run test:containers` (test/containers/run.sh brings it up and tears it
 * down), for tests that act on its containers: signal one service, start a second worker, look at
 * what is left in Postgres and S3. Thin wrappers around harness.sh.
 */
const run = promisify(execFile);
const HARNESS = join(__dirname, '..', 'harness.sh');

async function harness(...args: string[]): Promise<string> {
  const { stdout } = await run('bash', [HARNESS, ...args], { maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

export type Service =
  | 'gateway'
  | 'storage'
  | 'migrate'
  | 'worker-preview'
  | 'worker-archive'
  | 'worker-purge'
  | 'postgres'
  | 'redis'
  | 'minio';

export interface StackEnv {
  baseUrl: string;
  keyA: string;
  keyB: string;
  project: string;
}

export async function stackEnv(): Promise<StackEnv> {
  const lines = Object.fromEntries(
    (await harness('env'))
      .trim()
      .split('\n')
      .map((line) => line.split(/=(.*)/s).slice(0, 2) as [string, string]),
  );
  return {
    baseUrl: lines.UHP_CT_BASE_URL!,
    keyA: lines.UHP_CT_KEY_A!,
    keyB: lines.UHP_CT_KEY_B!,
    project: lines.UHP_CT_PROJECT!,
  };
}

/** Sends a signal to container `index` (1-based) of a service, as `docker stop` would (TERM). */
export async function signal(service: Service, sig = 'TERM', index = 1): Promise<void> {
  await harness('signal', sig, service, String(index));
}

/**
 * Waits until the container has stopped; its exit status (143 = ended by SIGTERM after shutting down,
 * 137 = SIGKILL).
 */
export async function waitExit(service: Service, index = 1, seconds = 90): Promise<number> {
  return Number((await harness('wait-exit', service, String(index), String(seconds))).trim());
}

/** Starts a stopped container again and waits until it is healthy. */
export async function start(service: Service, index = 1): Promise<void> {
  await harness('start', service, String(index));
}

/** Runs `count` containers of a service (e.g. a second worker-preview); waits until all are healthy. */
export async function scale(service: Service, count: number): Promise<void> {
  await harness('scale', service, String(count));
}

/**
 * One container of a service, made anew with `vars` in compose's environment (the variables
 * docker-compose.yml interpolates, e.g. WORKER_SHUTDOWN_GRACE_MS); without vars, back to its defaults.
 */
export async function recreate(service: Service, vars: Record<string, string> = {}): Promise<void> {
  await harness('recreate', service, ...Object.entries(vars).map(([name, value]) => `${name}=${value}`));
}

/** How many containers of a service are running. */
export async function running(service: Service): Promise<number> {
  return Number((await harness('running', service)).trim());
}

/** Rows of a query run by psql in the postgres container, each as its columns (text). */
export async function sql(query: string): Promise<string[][]> {
  const out = (await harness('sql', query)).replace(/\n$/, '');
  return out === '' ? [] : out.split('\n').map((line) => line.split('\t'));
}

/** Every object key in the bucket. */
export async function objectKeys(): Promise<string[]> {
  return (await harness('objects')).split('\n').filter(Boolean);
}

export async function logs(service: Service, index = 1): Promise<string> {
  return harness('logs', service, String(index));
}

const DOCKER = process.env.UHP_DOCKER ?? '/usr/bin/docker';

/** The id of container `index` (1-based) of a service. */
export async function containerId(service: Service, index = 1): Promise<string> {
  return (await harness('container', service, String(index))).trim();
}

/**
 * Runs a command in a service's container (`docker exec`, as the image's user unless `user` is given), with
 * `input` on its stdin; rejects when it exits non-zero unless `allowFailure`.
 */
export async function exec(
  service: Service,
  argv: string[],
  opts: { user?: string; input?: string | Buffer; allowFailure?: boolean } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const id = await containerId(service);
  const args = [
    'exec',
    ...(opts.input !== undefined ? ['-i'] : []),
    ...(opts.user ? ['-u', opts.user] : []),
    id,
    ...argv,
  ];
  return new Promise((resolve, reject) => {
    const child = execFile(DOCKER, args, { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      if (code !== 0 && !opts.allowFailure)
        reject(new Error(`docker exec ${argv.join(' ')} exited ${code}: ${stderr.trim().slice(0, 500)}`));
      else resolve({ code, stdout, stderr });
    });
    if (opts.input !== undefined) child.stdin!.end(opts.input);
  });
}

/** The address of the host on one of the stack's networks (its bridge's gateway), e.g. `backend`. */
export async function hostAddressOn(network: string): Promise<string> {
  const { project } = await stackEnv();
  const { stdout } = await run(DOCKER, [
    'network',
    'inspect',
    `${project}_${network}`,
    '-f',
    '{{range .IPAM.Config}}{{.Gateway}}{{end}}',
  ]);
  return stdout.trim();
}
