import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docx, paragraph, pdfText } from '../support/preview-fixtures';
import { containerId, stackEnv, type Service, type StackEnv } from './support/stack';

/**
 * The four images as OpenShift's restricted SCC runs them: a uid from the namespace's range with group 0, the
 * pod's fsGroup (the range's first id) as a supplementary group, no passwd entry, the image's USER ignored. Each
 * runs beside the compose stack of this tier, on its backend network, with the environment compose gives the
 * same service, and with the chart's mounts (the volumes of k8s/charts/uhp-files/templates/{gateway,storage}/
 * deployment.yaml, worker/deployments.yaml and migrate-job.yaml): a read-only root filesystem, /tmp an emptyDir,
 * and for the preview worker its scratch emptyDir at /tmp/uhp-previews with PREVIEW_WORK_DIR beneath it. An
 * emptyDir is a tmpfs here, owned as the kubelet leaves one under an fsGroup: root, group fsGroup, mode 2777.
 *
 * The migrate image exits 0; gateway, storage and worker answer /healthz and /readyz with 200; a .docx
 * (LibreOffice) and an .html page (Chromium) uploaded through this gateway come back as PDFs with their text.
 * This gateway and worker share a queue prefix of their own, so no compose worker can take those jobs, and the
 * worker's own conversion counter shows it made both; this storage holds the bytes.
 */
const run = promisify(execFile);
const DOCKER = process.env.UHP_DOCKER ?? '/usr/bin/docker';
const LABEL = 'uhp-files.test=arbitrary-uid';
/** The first uid of a namespace's range (openshift.io/sa.scc.uid-range: 1000870000/10000). */
const UID = 1000870000;
/** restricted-v2's fsGroup: the range's first id. */
const FS_GROUP = UID;
const QUEUE_PREFIX = `uidct${randomBytes(3).toString('hex')}`;
const MiB = 2 ** 20;

interface Component {
  name: 'migrate' | 'storage' | 'gateway' | 'worker';
  /** The compose service whose image and environment it takes. */
  service: Service;
  /** Where /healthz and /readyz answer. */
  port?: number;
  /** The chart's emptyDirs: mount path and sizeLimit. */
  emptyDirs: Array<[path: string, bytes: number]>;
  /** Set over the compose service's environment. */
  env?: Record<string, string>;
}

const STORAGE_ALIAS = 'uidct-storage';
const COMPONENTS: Component[] = [
  { name: 'migrate', service: 'migrate', emptyDirs: [['/tmp', 16 * MiB]] },
  { name: 'storage', service: 'storage', port: 8081, emptyDirs: [['/tmp', 64 * MiB]] },
  {
    name: 'gateway',
    service: 'gateway',
    port: 8080,
    emptyDirs: [['/tmp', 64 * MiB]],
    env: { STORAGE_URL: `http://${STORAGE_ALIAS}:8081`, REDIS_KEY_PREFIX: QUEUE_PREFIX },
  },
  {
    name: 'worker',
    service: 'worker-preview',
    port: 8082,
    emptyDirs: [
      ['/tmp', 64 * MiB],
      ['/tmp/uhp-previews', 2048 * MiB],
    ],
    env: {
      STORAGE_URL: `http://${STORAGE_ALIAS}:8081`,
      REDIS_KEY_PREFIX: QUEUE_PREFIX,
      PREVIEW_WORK_DIR: '/tmp/uhp-previews/work',
    },
  },
];

let env: StackEnv;
let backend: string;
let dir: string;
const started = new Map<Component['name'], { container: string; address: string }>();

async function docker(args: string[], extraEnv: Record<string, string> = {}): Promise<string> {
  const { stdout } = await run(DOCKER, args, { maxBuffer: 64 * 1024 * 1024, env: { ...process.env, ...extraEnv } });
  return stdout.trim();
}

/** The compose container's image, and the environment compose gave it (the image's own left to the image). */
async function composeService(service: Service): Promise<{ image: string; env: Record<string, string> }> {
  const [container] = JSON.parse(await docker(['inspect', await containerId(service)])) as [
    { Config: { Image: string; Env: string[] } },
  ];
  const [image] = JSON.parse(await docker(['image', 'inspect', container.Config.Image])) as [
    { Config: { Env: string[] } },
  ];
  const imageEnv = new Set(image.Config.Env);
  const entries = container.Config.Env.filter((entry) => !imageEnv.has(entry)).map(
    (entry) => entry.split(/=(.*)/s).slice(0, 2) as [string, string],
  );
  return { image: container.Config.Image, env: Object.fromEntries(entries) };
}

async function start(component: Component): Promise<string> {
  const compose = await composeService(component.service);
  const environment = { ...compose.env, ...component.env };
  const args = ['create', '--name', `uidct-${component.name}`, '--label', LABEL, '--network', backend];
  if (component.name === 'storage') args.push('--network-alias', STORAGE_ALIAS);
  args.push('--user', `${UID}:0`, '--group-add', String(FS_GROUP), '--read-only', '--cap-drop', 'ALL');
  args.push('--security-opt', 'no-new-privileges:true');
  for (const [path, bytes] of component.emptyDirs)
    args.push('--tmpfs', `${path}:rw,exec,nosuid,nodev,mode=2777,uid=0,gid=${FS_GROUP},size=${bytes}`);
  // Values through docker's own environment: no secret on a command line.
  for (const name of Object.keys(environment)) args.push('-e', name);
  const container = await docker([...args, compose.image], environment);
  await docker(['start', container]);
  return container;
}

async function addressOf(container: string): Promise<string> {
  return docker(['inspect', '-f', `{{(index .NetworkSettings.Networks "${backend}").IPAddress}}`, container]);
}

async function status(url: string): Promise<number> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(4_000) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

/** Polls a health path until it answers 200 or `seconds` pass; its last status. */
async function until200(url: string, seconds = 120): Promise<number> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const code = await status(url);
    if (code === 200 || Date.now() > deadline) return code;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

async function api(method: string, path: string, body?: FormData | object) {
  const gateway = started.get('gateway')!;
  const res = await fetch(`http://${gateway.address}:8080${path}`, {
    method,
    headers: {
      authorization: `Bearer ${env.keyA}`,
      ...(body && !(body instanceof FormData) ? { 'content-type': 'application/json' } : {}),
    },
    body: body instanceof FormData ? body : body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
}

/** Uploads a file into a new session's container through this gateway and asks it for the file's PDF. */
async function preview(filename: string, data: Buffer | string, type: string): Promise<string> {
  const session = JSON.parse((await api('POST', '/v1/sessions', {})).body.toString()) as { container_id: string };
  const form = new FormData();
  form.append('file', new Blob([data], { type }), filename);
  const uploaded = await api('POST', `/v1/containers/${session.container_id}/files`, form);
  expect(uploaded.status, uploaded.body.toString()).toBe(200);
  const file = JSON.parse(uploaded.body.toString()) as { id: string };
  const pdf = await api('GET', `/v1/containers/${session.container_id}/files/${file.id}/pdf`);
  expect(pdf.status, `${filename}: ${pdf.body.toString().slice(0, 300)}`).toBe(200);
  const path = join(dir, `${randomBytes(6).toString('hex')}.pdf`);
  await writeFile(path, pdf.body);
  return pdfText(path);
}

/** uhp_preview_conversions_total{converter, outcome="ok"} of this worker. */
async function conversions(converter: string): Promise<number> {
  const worker = started.get('worker')!;
  const text = await (await fetch(`http://${worker.address}:8082/metrics`)).text();
  const line = text
    .split('\n')
    .find(
      (l) =>
        l.startsWith('uhp_preview_conversions_total{') &&
        l.includes(`converter="${converter}"`) &&
        l.includes('outcome="ok"'),
    );
  return line ? Number(line.split(' ').pop()) : 0;
}

async function removeOurs(): Promise<void> {
  const ids = (await docker(['ps', '-aq', '--filter', `label=${LABEL}`])).split('\n').filter(Boolean);
  if (ids.length > 0) await docker(['rm', '-f', ...ids]);
}

beforeAll(async () => {
  env = await stackEnv();
  backend = `${env.project}_backend`;
  dir = await mkdtemp(join(tmpdir(), 'uhp-ct-uid-'));
  await removeOurs();
  for (const component of COMPONENTS) {
    const container = await start(component);
    // The migrate Job runs to completion first, as the chart's pre-install hook does.
    if (component.name === 'migrate') await docker(['wait', container]);
    started.set(component.name, { container, address: await addressOf(container) });
  }
}, 180_000);

afterAll(async () => {
  for (const [name, { container }] of started) {
    const state = await docker(['inspect', '-f', '{{.State.Status}} {{.State.ExitCode}}', container]).catch(() => '');
    if (state !== 'running 0' && state !== 'exited 0')
      console.error(`${name}: ${state}\n${await docker(['logs', '--tail', '40', container]).catch(() => '')}`);
  }
  await removeOurs();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 120_000);

describe(`the images as uid ${UID} in group 0 (OpenShift), read-only with the chart's emptyDirs`, () => {
  it('every process runs as that uid with group 0 and the fsGroup, and no passwd entry names it', async () => {
    for (const [name, { container }] of started) {
      if (name === 'migrate') continue;
      const status = await docker(['exec', container, 'cat', '/proc/1/status']);
      const field = (key: string) => new RegExp(`^${key}:\\s*(.*)$`, 'm').exec(status)?.[1]?.trim().split(/\s+/);
      expect(field('Uid'), name).toEqual(Array(4).fill(String(UID)));
      expect(field('Gid'), name).toEqual(['0', '0', '0', '0']);
      expect(field('Groups'), name).toEqual(['0', String(FS_GROUP)]);
      expect(await docker(['exec', container, 'sh', '-c', 'getent passwd "$(id -u)" || echo none']), name).toBe('none');
    }
  });

  it('the migrate image exits 0', async () => {
    const { container } = started.get('migrate')!;
    expect(await docker(['inspect', '-f', '{{.State.ExitCode}}', container])).toBe('0');
  });

  it('gateway, storage and worker answer /healthz and /readyz with 200', async () => {
    for (const component of COMPONENTS.filter((c) => c.port !== undefined)) {
      const { address } = started.get(component.name)!;
      expect(await until200(`http://${address}:${component.port}/healthz`), `${component.name} /healthz`).toBe(200);
      expect(await until200(`http://${address}:${component.port}/readyz`), `${component.name} /readyz`).toBe(200);
    }
    const { address } = started.get('worker')!;
    const body = (await (await fetch(`http://${address}:8082/readyz`)).json()) as {
      previews: { converters: Record<string, { ok: boolean }>; isolation: { network: string; filesystem: string } };
    };
    expect(body.previews.converters).toMatchObject({ libreoffice: { ok: true }, chromium: { ok: true } });
    expect(body.previews.isolation).toMatchObject({ network: 'seccomp', filesystem: 'landlock' });
  }, 300_000);

  it('this worker converts a .docx with LibreOffice and an .html page with Chromium', async () => {
    const marker = randomBytes(4).toString('hex');
    const before = { libreoffice: await conversions('libreoffice'), chromium: await conversions('chromium') };
    expect(await preview('uid.docx', docx(paragraph(`Office as uid ${marker}`)), 'application/octet-stream')).toContain(
      `Office as uid ${marker}`,
    );
    expect(await preview('uid.html', `<html><body><p>Page as uid ${marker}</p></body></html>`, 'text/html')).toContain(
      `Page as uid ${marker}`,
    );
    expect(await conversions('libreoffice')).toBe(before.libreoffice + 1);
    expect(await conversions('chromium')).toBe(before.chromium + 1);
  }, 300_000);
});
