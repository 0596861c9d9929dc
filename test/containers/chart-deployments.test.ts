import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { render, ROOT, type K8sObject } from '../chart/support/helm';
import {
  resolveEnv,
  serviceOf,
  workloads,
  type Container,
  type Probe,
  type Workload,
} from '../chart/support/workloads';
import { stackEnv } from './support/stack';

/**
 * The Helm chart's pods, run on this machine: every rendered Deployment's container (its image, command and
 * args, the environment from the rendered ConfigMaps and Secret, its security context, its emptyDirs as
 * tmpfs, its limits) as a container next to the compose stack of this tier, whose Postgres, Redis and S3
 * stand in for the external ones. The migrate hook Job runs first. Then each container's startup, readiness
 * and liveness probes must answer on its pod address as the kubelet would ask them, its preStop command must
 * exist, and the public conformance suite must pass through the chart's gateway (its own queue prefix, so
 * only the chart's workers take its jobs).
 *
 * What this cannot show: the Kubernetes objects themselves being accepted and scheduled (no cluster here).
 */
const run = promisify(execFile);
const DOCKER = process.env.UHP_DOCKER ?? '/usr/bin/docker';
const LABEL = 'uhp-files.test=chart-deployments';
const GATEWAY_PORT = 18590;
const BASE_URL = `http://127.0.0.1:${GATEWAY_PORT}`;
const KEYS = { a: 'sk_test_alice', b: 'sk_test_bob' };

let objects: K8sObject[] = [];
let secrets: Record<string, Record<string, string>> = {};
const started: Array<{ workload: Workload; container: string; address: string }> = [];
let networks: { backend: string; edge: string };

async function docker(args: string[], env?: NodeJS.ProcessEnv): Promise<string> {
  const { stdout } = await run(DOCKER, args, { maxBuffer: 64 * 1024 * 1024, env: env ?? process.env });
  return stdout.trim();
}

/** Kubernetes quantities as docker takes them: memory in bytes, CPUs as a decimal. */
const bytes = (quantity: string) => {
  const match = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G)?$/.exec(quantity);
  if (!match) throw new Error(`quantity ${quantity}`);
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9 }[match[2] ?? ''] ?? 1;
  return Math.round(Number(match[1]) * unit);
};
const cpus = (quantity: string) => (quantity.endsWith('m') ? Number(quantity.slice(0, -1)) / 1000 : Number(quantity));

/** The container's environment with the Secret's values filled in (given to docker through its own env). */
function environment(container: Container): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, entry] of Object.entries(resolveEnv(container, objects))) {
    if ('value' in entry) env[name] = entry.value;
    else {
      const value = secrets[entry.secret]?.[entry.key];
      if (value === undefined) throw new Error(`${container.name}: Secret ${entry.secret} has no key ${entry.key}`);
      env[name] = value;
    }
  }
  return env;
}

/** `docker create` arguments for a rendered pod's first container, as close to the kubelet's as docker gets. */
function createArgs(
  workload: Workload,
  name: string,
  network: string,
): { args: string[]; env: Record<string, string> } {
  const pod = workload.spec.template.spec;
  const container = pod.containers[0]!;
  const security = { ...pod.securityContext, ...container.securityContext } as Record<string, unknown> & {
    capabilities?: { drop?: string[] };
  };
  const env = environment(container);
  const args = ['create', '--name', name, '--label', LABEL, '--network', network];
  if (security.runAsUser !== undefined)
    args.push('--user', `${security.runAsUser}:${security.runAsGroup ?? security.runAsUser}`);
  if (security.readOnlyRootFilesystem) args.push('--read-only');
  for (const capability of security.capabilities?.drop ?? []) args.push('--cap-drop', capability);
  if (security.allowPrivilegeEscalation === false) args.push('--security-opt', 'no-new-privileges:true');
  // seccompProfile RuntimeDefault: docker's default profile, which containerd's RuntimeDefault derives from.
  expect(security.seccompProfile).toEqual({ type: 'RuntimeDefault' });
  // emptyDirs: tmpfs of the same size, exec like an emptyDir, its root owned by root and, setgid, by the pod's
  // fsGroup (what the kubelet makes of an emptyDir with fsGroup).
  const mounts = [...(container.volumeMounts ?? [])].sort((x, y) => x.mountPath.length - y.mountPath.length);
  for (const mount of mounts) {
    const volume = pod.volumes?.find((v) => v.name === mount.name);
    if (!volume?.emptyDir) throw new Error(`${workload.metadata.name}: volume ${mount.name} is not an emptyDir`);
    const size = volume.emptyDir.sizeLimit ? `,size=${bytes(volume.emptyDir.sizeLimit)}` : '';
    const group = pod.securityContext?.fsGroup ?? 0;
    args.push('--tmpfs', `${mount.mountPath}:rw,exec,nosuid,nodev,mode=2777,uid=0,gid=${group}${size}`);
  }
  const limits = container.resources?.limits ?? {};
  if (limits.memory) args.push('--memory', String(bytes(limits.memory)));
  if (limits.cpu) args.push('--cpus', String(cpus(limits.cpu)));
  for (const name of Object.keys(env)) args.push('-e', name);
  const [entrypoint, ...commandRest] = container.command ?? [];
  if (entrypoint) args.push('--entrypoint', entrypoint);
  args.push(container.image.replace(/^docker\.io\//, ''), ...commandRest, ...(container.args ?? []));
  return { args, env: { ...process.env, ...env } as Record<string, string> };
}

async function addressOf(container: string): Promise<string> {
  return docker(['inspect', '-f', `{{(index .NetworkSettings.Networks "${networks.backend}").IPAddress}}`, container]);
}

/** A probe as the kubelet makes it: HTTP GET to the pod's address on the named port; 2xx/3xx is success. */
async function probe(address: string, container: Container, check: Probe): Promise<number> {
  const port = container.ports!.find((p) => p.name === check.httpGet!.port || p.containerPort === check.httpGet!.port)!;
  try {
    const response = await fetch(`http://${address}:${port.containerPort}${check.httpGet!.path}`, {
      signal: AbortSignal.timeout(4_000),
    });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

async function removeOurs(): Promise<void> {
  const ids = (await docker(['ps', '-aq', '--filter', `label=${LABEL}`])).split('\n').filter(Boolean);
  if (ids.length > 0) await docker(['rm', '-f', ...ids]);
}

beforeAll(async () => {
  const { project } = await stackEnv();
  networks = { backend: `${project}_backend`, edge: `${project}_edge` };
  await removeOurs();
  objects = await render({
    overrides: {
      // The suite reaches the gateway on loopback and reads /metrics on its API port: production refuses
      // both, development starts with a warning for each (the chart tests prove the production refusals).
      environment: 'development',
      gateway: { apiMetrics: true },
      publicBaseUrl: BASE_URL,
      image: { repository: 'uhp-files', tag: 'local', pullPolicy: 'Never' },
      // The compose stack's backing services, by their names on its backend network.
      database: { url: 'postgresql://uhp:uhp-test-password@postgres:5432/uhp' },
      redis: { host: 'redis', port: 6379, db: 0, auth: false, keyPrefix: 'chartct' },
      s3: {
        endpoint: 'http://minio:9000',
        bucket: 'uhp-conformance',
        accessKeyId: 'uhp-test-access',
        secretAccessKey: 'uhp-test-secret-key-0123456789',
      },
      storageToken: 'chart-containers-storage-token-0123456789',
      apiKeys: `alice=${KEYS.a},bob=${KEYS.b}`,
      maxFileBytes: 8388608,
    },
  });
  secrets = Object.fromEntries(
    objects
      .filter((object) => object.kind === 'Secret')
      .map((object) => [
        object.metadata.name,
        Object.fromEntries(
          Object.entries((object as K8sObject & { data: Record<string, string> }).data).map(([key, value]) => [
            key,
            Buffer.from(value, 'base64').toString('utf8'),
          ]),
        ),
      ]),
  );

  // The pre-install hook first: migrations, to completion.
  const job = workloads(objects).find((w) => w.kind === 'Job')!;
  const migrate = createArgs(job, 'chartct-migrate', networks.backend);
  const id = await docker(migrate.args, migrate.env);
  await docker(['start', id]);
  expect(await docker(['wait', id]), 'the migrate hook exits 0').toBe('0');

  // Then the Deployments, storage first (gateway and workers need it to be ready).
  const order = ['storage', 'gateway', 'worker'];
  const deployments = workloads(objects)
    .filter((w) => w.kind === 'Deployment')
    .sort((x, y) => order.indexOf(serviceOf(x)) - order.indexOf(serviceOf(y)));
  for (const workload of deployments) {
    const gateway = serviceOf(workload) === 'gateway';
    const name = `chartct-${workload.metadata.name}`;
    const { args, env } = createArgs(workload, name, gateway ? networks.edge : networks.backend);
    // The Service in front of it: its name resolves to the pod on the backend network.
    if (gateway) args.splice(1, 0, '-p', `127.0.0.1:${GATEWAY_PORT}:8080`);
    else args.splice(1, 0, '--network-alias', workload.metadata.name);
    const container = await docker(args, env);
    if (gateway) await docker(['network', 'connect', '--alias', workload.metadata.name, networks.backend, container]);
    await docker(['start', container]);
    started.push({ workload, container, address: await addressOf(container) });
  }
}, 300_000);

afterAll(async () => {
  for (const { workload, container } of started) {
    const status = await docker(['inspect', '-f', '{{.State.Status}}', container]).catch(() => 'gone');
    if (status !== 'running')
      console.error(
        `${workload.metadata.name}: ${status}\n${await docker(['logs', '--tail', '40', container]).catch(() => '')}`,
      );
  }
  await removeOurs();
}, 120_000);

describe('the chart’s Deployments, run as containers', () => {
  it('every container passes its startup, readiness and liveness probes on its pod address', async () => {
    expect(started.map((s) => s.workload.metadata.name).sort()).toEqual([
      'uhp-uhp-files-gateway',
      'uhp-uhp-files-storage',
      'uhp-uhp-files-worker-archive',
      'uhp-uhp-files-worker-preview',
      'uhp-uhp-files-worker-purge',
    ]);
    for (const { workload, container, address } of started) {
      const spec = workload.spec.template.spec.containers[0]!;
      const startup = spec.startupProbe!;
      // The kubelet's patience: failureThreshold × periodSeconds for the startup probe.
      const deadline = Date.now() + startup.failureThreshold! * startup.periodSeconds! * 1000;
      const untilOk = async (check: Probe) => {
        for (;;) {
          const status = await probe(address, spec, check);
          if (status === 200 || Date.now() > deadline) return status;
          await new Promise((r) => setTimeout(r, 1000));
        }
      };
      expect(await untilOk(startup), `${workload.metadata.name}: startup probe`).toBe(200);
      expect(await untilOk(spec.readinessProbe!), `${workload.metadata.name}: readiness probe`).toBe(200);
      expect(await probe(address, spec, spec.livenessProbe!), `${workload.metadata.name}: liveness probe`).toBe(200);
      // The metrics port the ServiceMonitor scrapes.
      const metrics = spec.ports!.find((p) => p.name === 'metrics')!.containerPort;
      const scraped = await fetch(`http://${address}:${metrics}/metrics`);
      expect(scraped.status, `${workload.metadata.name}: /metrics`).toBe(200);
      // The preStop hook's command exists in the image and returns.
      const preStop = spec.lifecycle!.preStop!.exec!.command;
      await docker(['exec', container, preStop[0]!, '0']);
    }
  }, 300_000);

  it('the preview pool converts in its strongest mode under the default seccomp profile: seccomp + Landlock', async () => {
    const preview = started.find((s) => s.workload.metadata.name.endsWith('-worker-preview'))!;
    const body = (await (await fetch(`http://${preview.address}:8082/readyz`)).json()) as {
      previews: { isolation: { network: string; filesystem: string } };
    };
    expect(body.previews.isolation).toMatchObject({ network: 'seccomp', filesystem: 'landlock' });
  });

  it('the conformance suite passes through the chart’s gateway', async () => {
    const suite = join(ROOT, '..', 'shared', 'conformance', 'run.mjs');
    const output = await new Promise<{ code: number; text: string }>((resolve) => {
      const child = spawn(process.execPath, [suite, '--base-url', BASE_URL, '--key-a', KEYS.a, '--key-b', KEYS.b], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let text = '';
      child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
      child.on('close', (code) => resolve({ code: code ?? 1, text }));
    });
    const failures = output.text.split('\n').filter((line) => line.startsWith('FAIL'));
    expect(failures, output.text.split('\n').slice(-5).join('\n')).toEqual([]);
    expect(output.code).toBe(0);
    expect(output.text).toMatch(/conformance: \d+ passed, 0 failed/);
  }, 600_000);
});
