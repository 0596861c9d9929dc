import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docx, odpLinkingImages, paragraph, pdfText } from '../support/preview-fixtures';
import { exec, hostAddressOn, logs, stackEnv, type StackEnv } from './support/stack';

/**
 * Previews inside the worker container as compose runs it (uid 1000, read-only root, no capabilities,
 * no-new-privileges, Docker's default seccomp profile, no privileged mode, no node-level setup): documents that
 * link an external URL and file:// paths (another job's files, the worker's own, its environment) reach none of
 * them, and the preview worker says at /readyz which isolation mode is in force.
 */
const run = promisify(execFile);
const WORK_DIR = '/tmp/uhp-previews'; // PREVIEW_WORK_DIR in the image
const PLANTED = `${WORK_DIR}/jobs/job-planted`; // "another job": the worker's jobs dir, as its uid keeps it
const LAUNCHER = '/app/dist/apps/worker/src/previews/sandbox/confine.py';
const SECRET = `PlantedSecret${randomBytes(4).toString('hex')}`;
/** In the worker's environment (test.env): no preview may show it. */
const ENV_SECRETS = ['containers-test-storage-token', 'uhp-test-password', 'STORAGE_TOKEN=', 'DATABASE_URL='];

interface Isolation {
  network: string;
  filesystem: string;
  landlockAbi: number;
  chromiumSandbox: boolean;
}

let env: StackEnv;
let dir: string;
let server: Server;
let listener: string;
let hits: string[] = [];
let listenerReachable = false;
let isolation: Isolation;

async function api(method: string, path: string, body?: FormData | object) {
  const res = await fetch(`${env.baseUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${env.keyA}`,
      ...(body && !(body instanceof FormData) ? { 'content-type': 'application/json' } : {}),
    },
    body: body instanceof FormData ? body : body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
}

/** Uploads a file into a new session's container and asks the gateway for its PDF. */
async function preview(filename: string, data: Buffer | string, type = 'application/octet-stream') {
  const session = JSON.parse((await api('POST', '/v1/sessions', {})).body.toString()) as { container_id: string };
  const form = new FormData();
  form.append('file', new Blob([data], { type }), filename);
  const uploaded = await api('POST', `/v1/containers/${session.container_id}/files`, form);
  expect(uploaded.status, uploaded.body.toString()).toBe(200);
  const file = JSON.parse(uploaded.body.toString()) as { id: string };
  const pdf = await api('GET', `/v1/containers/${session.container_id}/files/${file.id}/pdf`);
  expect(pdf.status, pdf.body.toString().slice(0, 300)).toBe(200);
  const path = join(dir, `${randomBytes(6).toString('hex')}.pdf`);
  await writeFile(path, pdf.body);
  return path;
}

async function imageSizes(pdf: string): Promise<string[]> {
  const { stdout } = await run('pdfimages', ['-list', pdf]);
  return stdout
    .split('\n')
    .slice(2)
    .filter((line) => line.trim())
    .map((line) => line.trim().split(/\s+/).slice(3, 5).join('x'));
}

function expectNothingLeaked(text: string) {
  expect(text).not.toContain(SECRET);
  for (const secret of ENV_SECRETS) expect(text).not.toContain(secret);
}

const svg = (text: string) =>
  `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="60"><text x="5" y="40" font-size="30">${text}</text></svg>`;

beforeAll(async () => {
  env = await stackEnv();
  dir = await mkdtemp(join(tmpdir(), 'uhp-ct-previews-'));
  // A listener on the host, on every address: reachable from the worker container through its network's bridge.
  server = createServer((req, res) => {
    hits.push(req.url ?? '');
    res.setHeader('content-type', 'image/svg+xml');
    res.end(svg('fetched from the host'));
  });
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  listener = `http://${await hostAddressOn('backend')}:${(server.address() as AddressInfo).port}`;
  // Control: the worker container itself can reach it, so a converter that did not would be the sandbox's doing.
  const control = await exec(
    'worker-preview',
    [
      'node',
      '-e',
      `fetch('${listener}/control', { signal: AbortSignal.timeout(5000) }).then((r) => console.log(r.status), (e) => console.log(String(e.cause ?? e)))`,
    ],
    { allowFailure: true },
  );
  listenerReachable = hits.includes('/control');
  console.log(
    `listener ${listener}: reachable from the worker container: ${listenerReachable} (${control.stdout.trim()})`,
  );
  // Another job's files, planted in the worker's jobs dir as the worker keeps them (uid 1000, 0700).
  const png = await sharp({ create: { width: 321, height: 123, channels: 3, background: '#c00' } })
    .png()
    .toBuffer();
  await exec('worker-preview', ['sh', '-ec', `mkdir -p -m 700 ${PLANTED} && cat > ${PLANTED}/secret.svg`], {
    input: svg(SECRET),
  });
  await exec('worker-preview', ['sh', '-ec', `cat > ${PLANTED}/secret.png`], { input: png });
  await exec('worker-preview', ['sh', '-ec', `echo ${SECRET} > ${PLANTED}/secret.txt`]);
  const ready = await exec('worker-preview', [
    'node',
    '-e',
    "fetch('http://127.0.0.1:8082/readyz').then((r) => r.json()).then((b) => console.log(JSON.stringify(b.previews.isolation)))",
  ]);
  isolation = JSON.parse(ready.stdout.trim()) as Isolation;
  console.log(`worker-preview isolation mode: ${JSON.stringify(isolation)}`);
});

afterAll(async () => {
  server?.close();
  await exec('worker-preview', ['rm', '-rf', PLANTED], { allowFailure: true }).catch(() => undefined);
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The worker's own process in the worker-preview container. */
async function workerPid(): Promise<string> {
  const pid = (
    await exec('worker-preview', [
      'sh',
      '-c',
      "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -q 'dist/apps/worker/src/main.js' && echo ${p#/proc/}; done | head -n 1",
    ])
  ).stdout.trim();
  expect(pid).toMatch(/^\d+$/);
  return pid;
}

describe('previews in the worker container (uid 1000, default seccomp profile, no privileges)', () => {
  it('/readyz and the log say which isolation mode is in force; the network and other jobs are covered', async () => {
    expect(['namespace', 'seccomp']).toContain(isolation.network);
    expect(['uid', 'landlock']).toContain(isolation.filesystem);
    expect(typeof isolation.chromiumSandbox).toBe('boolean');
    expect(await logs('worker-preview')).toContain(
      `preview converters isolated: network=${isolation.network} filesystem=${isolation.filesystem}`,
    );
  });

  it('a document linking an external URL and file:// paths (another job, the worker) embeds none, fetches nothing', async () => {
    hits = [];
    const office = await preview(
      'linked.odp',
      odpLinkingImages(`Slide ${SECRET.slice(-4)} visible`, [
        `${listener}/linked.svg`,
        `file://${PLANTED}/secret.svg`,
        `file://${PLANTED}/secret.png`,
        'file:///app/dist/apps/worker/src/main.js',
        'file:///proc/self/environ',
        'file:///proc/1/environ',
      ]),
    );
    const officeText = await pdfText(office);
    expect(officeText).toContain(`Slide ${SECRET.slice(-4)} visible`);
    expectNothingLeaked(officeText);
    expect(officeText).not.toContain('fetched from the host');
    expect(await imageSizes(office)).not.toContain('321x123');

    const include = await pdfText(
      await preview(
        'include.docx',
        docx(
          paragraph('Include visible') +
            ['/proc/self/environ', '/proc/1/environ', `${PLANTED}/secret.txt`, '/app/dist/apps/worker/src/main.js']
              .map(
                (path) =>
                  `<w:p><w:fldSimple w:instr=' INCLUDETEXT "${path}" '><w:r><w:t>stored</w:t></w:r></w:fldSimple></w:p>`,
              )
              .join(''),
        ),
      ),
    );
    expect(include).toContain('Include visible');
    expectNothingLeaked(include);

    const page = await preview(
      'page.html',
      `<html><head><link rel="stylesheet" href="${listener}/style.css"></head><body><p>Page visible</p>
        <img src="${listener}/pixel.svg"><img src="file://${PLANTED}/secret.png"><iframe src="file://${PLANTED}/secret.txt"></iframe>
        <iframe src="file:///proc/self/environ"></iframe><iframe src="file:///app/dist/apps/worker/src/main.js"></iframe></body></html>`,
      'text/html',
    );
    const pageText = await pdfText(page);
    expect(pageText).toContain('Page visible');
    expectNothingLeaked(pageText);
    expect(await imageSizes(page)).not.toContain('321x123');

    const sheet = await pdfText(await preview('web.csv', `a,b\nweb,"=WEBSERVICE(""${listener}/csv"")"\n`, 'text/csv'));
    expect(sheet).toContain('=WEBSERVICE(');

    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(hits).toEqual([]);
  });

  it('an image is decoded by the confined renderer (node_modules readable to it): the worker never loads libvips', async () => {
    const png = await sharp({ create: { width: 240, height: 90, channels: 3, background: '#08c' } })
      .png()
      .toBuffer();
    expect(await imageSizes(await preview('chart.png', png, 'image/png'))).toContain('240x90');
    expect((await exec('worker-preview', ['cat', `/proc/${await workerPid()}/maps`])).stdout).not.toContain('libvips');
  });

  it('a process confined as the worker confines converters reads neither its environment nor another job, and connects nowhere', async () => {
    // The flags sandbox.ts gives a converter in the mode /readyz reports (no uid switch: the worker is uid 1000).
    const flags = [
      ...(isolation.landlockAbi > 0 ? ['--landlock', '--rw', `${WORK_DIR}/probe-own`, '--no-tcp'] : []),
      ...(isolation.network === 'seccomp' ? ['--seccomp-nonet'] : []),
    ];
    const confine = ['python3', '-I', '-S', LAUNCHER, ...flags, '--'];
    await exec('worker-preview', ['mkdir', '-p', `${WORK_DIR}/probe-own`]);
    const pid = await workerPid();
    // Control: unconfined, the same uid reads both.
    expect((await exec('worker-preview', ['cat', `/proc/${pid}/environ`])).stdout).toContain('STORAGE_TOKEN=');
    expect((await exec('worker-preview', ['cat', `${PLANTED}/secret.txt`])).stdout).toContain(SECRET);
    for (const path of [`/proc/${pid}/environ`, `${PLANTED}/secret.txt`, '/app/dist/apps/worker/src/main.js']) {
      const read = await exec('worker-preview', [...confine, 'cat', path], { allowFailure: true });
      expect(read.code, path).not.toBe(0);
      expectNothingLeaked(read.stdout);
    }
    hits = [];
    const connect = await exec(
      'worker-preview',
      [
        ...confine,
        'python3',
        '-c',
        `import socket; socket.create_connection(("${new URL(listener).hostname}", ${new URL(listener).port}), 3)`,
      ],
      { allowFailure: true },
    );
    expect(connect.code).not.toBe(0);
    expect(hits).toEqual([]);
  });
});
