import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPreviewConverters, type PreviewConverters } from '../../../apps/worker/src/previews/converter.registry';
import { cleanEnvironment, SANDBOX_UIDS, uidOf } from '../../../apps/worker/src/previews/sandbox/sandbox';
import { docx, odpLinkingImages, paragraph, pdfText } from '../../support/preview-fixtures';

/**
 * The converters' confinement on this host: each mode the worker can choose is tried with processes that try to
 * reach what they must not (another job's files, a world-readable file outside their own directories, the
 * worker's environment, a TCP listener on 127.0.0.1), and with documents that link them. The container's mode
 * (seccomp + Landlock, no uid switch) runs here too; the container tier runs it for real, as uid 1000.
 */
const run = promisify(execFile);
const isRoot = process.getuid?.() === 0;
const MARKER = `Visible${randomUUID().slice(0, 8)}`;
const OTHER_JOB_SECRET = `OtherJob${randomUUID().slice(0, 8)}`;
const PUBLIC_SECRET = `Public${randomUUID().slice(0, 8)}`;
const ENV_SECRET = `canary-env-${randomUUID()}`;

let dir: string;
let otherJob: string;
let publicDir: string;
let server: Server;
let serverUrl: string;
let serverHits: string[] = [];
/** The default: the strongest mode this host allows. */
let strongest: PreviewConverters;
/** What the worker container gets: no namespaces, no uid switch; seccomp + Landlock. */
let containerLike: PreviewConverters;

const svg = (text: string) =>
  `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="60"><text x="5" y="40" font-size="30">${text}</text></svg>`;

async function convert(converters: PreviewConverters, filename: string, bytes: Buffer | string, type = '') {
  const source = join(dir, `${randomUUID()}-${filename}`);
  await writeFile(source, bytes);
  const out = join(dir, `${randomUUID()}.pdf`);
  await converters.registry.convert(
    { path: source, filename, contentType: type },
    { path: out },
    new AbortController().signal,
  );
  return out;
}

/** Image sizes in a PDF (`pdfimages -list`). */
async function imageSizes(pdf: string): Promise<string[]> {
  const { stdout } = await run('pdfimages', ['-list', pdf]);
  return stdout
    .split('\n')
    .slice(2)
    .filter((line) => line.trim())
    .map((line) => line.trim().split(/\s+/).slice(3, 5).join('x'));
}

/** The image renderer, as the image converter starts it, asked to render `path` (exit 0: it could read it). */
async function renderImage(converters: PreviewConverters, path: string) {
  const { image } = converters;
  return converters.runner.run({
    command: image.files.node,
    args: [image.files.imageRenderScript, 'render', path, join(image.dir, `${randomUUID()}.pdf`), '1000000', '4000'],
    identity: image.identity,
    limits: {},
    env: cleanEnvironment(image.dir),
    cwd: image.dir,
    timeoutMs: 20_000,
  });
}

/** A command run the way converters are, in a converter's own (fresh) directory. */
async function confined(converters: PreviewConverters, command: string, args: string[]) {
  const own = join(converters.options.workDir, 'probe-own');
  const identity = { uidOffset: SANDBOX_UIDS.probe, writable: [own] };
  await converters.runner.makeOwnDir(own, identity);
  return converters.runner.run({
    command,
    args,
    identity,
    limits: {},
    env: cleanEnvironment(own),
    cwd: own,
    timeoutMs: 10_000,
  });
}

function statusField(status: string, field: string): string {
  return new RegExp(`^${field}:[ \\t]*(.*)$`, 'm').exec(status)?.[1]?.trim() ?? '';
}

/** pids of the browser's process group whose command line matches, waiting up to 5 s for one. */
async function browserProcesses(browser: number, matches: (args: string) => boolean): Promise<number[]> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const { stdout } = await run('ps', ['-o', 'pid=,args=', '-g', String(browser)]);
    const pids = stdout
      .split('\n')
      .filter((line) => line.trim() && matches(line))
      .map((line) => Number(line.trim().split(/\s+/)[0]));
    if (pids.length > 0 || Date.now() > deadline) return pids;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

beforeAll(async () => {
  process.env.UHP_PREVIEW_TEST_SECRET = ENV_SECRET; // the worker's environment: no converter may read it
  dir = await mkdtemp(join(tmpdir(), 'uhp-isolation-test-'));
  await chmod(dir, 0o711); // converters of other uids pass through to their own dirs beneath it
  // Another job's files, kept as the worker keeps them (a private dir), and a world-readable file outside every
  // converter's directories (only Landlock keeps a converter of any uid from it).
  otherJob = join(dir, 'jobs', 'job-other');
  await mkdir(otherJob, { recursive: true, mode: 0o700 });
  await writeFile(join(otherJob, 'secret.svg'), svg(OTHER_JOB_SECRET), { mode: 0o600 });
  await writeFile(join(otherJob, 'secret.txt'), `${OTHER_JOB_SECRET}\n`, { mode: 0o600 });
  await sharp({ create: { width: 321, height: 123, channels: 3, background: '#c00' } })
    .png()
    .toFile(join(otherJob, 'secret.png'));
  publicDir = join(dir, 'public');
  await mkdir(publicDir);
  await chmod(publicDir, 0o755);
  await writeFile(join(publicDir, 'public.svg'), svg(PUBLIC_SECRET), { mode: 0o644 });
  await writeFile(join(publicDir, 'public.txt'), `${PUBLIC_SECRET}\n`, { mode: 0o644 });
  await sharp({ create: { width: 321, height: 123, channels: 3, background: '#0c0' } })
    .png()
    .toFile(join(publicDir, 'public.png'));
  await chmod(join(publicDir, 'public.png'), 0o644);
  server = createServer((req, res) => {
    serverHits.push(req.url ?? '');
    res.setHeader('content-type', 'image/svg+xml');
    res.end(svg('fetched'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  serverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  strongest = await createPreviewConverters({ workDir: join(dir, 'strongest'), office: { poolSize: 1 } });
  containerLike = await createPreviewConverters({
    workDir: join(dir, 'container'),
    office: { poolSize: 1 },
    sandbox: { only: { network: ['seccomp'], filesystem: ['landlock'] } },
  });
});

afterAll(async () => {
  await strongest?.registry.close();
  await containerLike?.registry.close();
  server?.close();
  delete process.env.UHP_PREVIEW_TEST_SECRET;
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the isolation mode', () => {
  it.runIf(isRoot)("as root here: a network namespace, a uid per converter, Landlock, Chromium's own sandbox", () => {
    expect(strongest.isolation).toMatchObject({ network: 'namespace', filesystem: 'uid', chromiumSandbox: true });
    expect(strongest.isolation.landlockAbi).toBeGreaterThan(0);
    expect(strongest.isolation.refused).toBeUndefined();
    expect(containerLike.isolation).toMatchObject({
      network: 'seccomp',
      filesystem: 'landlock',
      chromiumSandbox: false,
    });
  });

  it('PREVIEW_ISOLATE_NETWORK=required refuses converters where no network isolation works; off skips it', async () => {
    const refused = await createPreviewConverters({
      workDir: join(dir, 'refused'),
      sandbox: { network: 'require', only: { network: ['none'] } },
    });
    try {
      expect(refused.isolation.network).toBe('none');
      expect(refused.isolation.refused).toMatch(/required/);
      expect(await refused.office.available()).toMatchObject({ ok: false });
      expect(await refused.pdf.available()).toMatchObject({ ok: false });
    } finally {
      await refused.registry.close();
    }
    const off = await createPreviewConverters({ workDir: join(dir, 'off'), sandbox: { network: 'off' } });
    try {
      expect(off.isolation.network).toBe('none');
      expect(off.isolation.refused).toBeUndefined();
    } finally {
      await off.registry.close();
    }
  });
});

describe.each([
  ['the strongest mode', () => strongest],
  ['the container mode (seccomp + Landlock)', () => containerLike],
])('a process confined in %s', (_name, converters) => {
  it("reads its own dir, not another job's files, a world-readable file elsewhere or the worker's environment", async () => {
    const c = converters();
    // Landlock keeps a confined process from the worker's /proc files (its ptrace rules) unless it holds
    // CAP_SYS_PTRACE, as root does without a uid switch (never so in the container, which runs as uid 1000).
    const paths = [join(otherJob, 'secret.txt'), join(publicDir, 'public.txt')];
    if (!(isRoot && c.isolation.filesystem !== 'uid')) paths.push(`/proc/${process.pid}/environ`);
    for (const path of paths) {
      const result = await confined(c, '/bin/cat', [path]);
      expect(result.code, path).not.toBe(0);
      expect(result.stdout).not.toContain(OTHER_JOB_SECRET);
      expect(result.stdout).not.toContain(PUBLIC_SECRET);
      expect(result.stdout).not.toContain(ENV_SECRET);
    }
    expect((await confined(c, '/bin/sh', ['-c', 'echo mine > own.txt && cat own.txt'])).stdout).toContain('mine');
    expect((await confined(c, '/bin/ls', [dir])).code).not.toBe(0);
  });

  it('reaches no TCP listener, not even on 127.0.0.1', async () => {
    serverHits = [];
    const port = new URL(serverUrl).port;
    const result = await confined(converters(), '/bin/bash', ['-c', `echo > /dev/tcp/127.0.0.1/${port}`]);
    expect(result.code).not.toBe(0);
    expect(serverHits).toEqual([]);
  });
});

it('control: with no isolation the same process and LibreOffice reach all of it (the fixtures are live)', async () => {
  const open = await createPreviewConverters({
    workDir: join(dir, 'open'),
    office: { poolSize: 1 },
    sandbox: { network: 'off', only: { filesystem: ['none'] } },
  });
  try {
    expect((await confined(open, '/bin/cat', [join(publicDir, 'public.txt')])).stdout).toContain(PUBLIC_SECRET);
    if (isRoot)
      expect((await confined(open, '/bin/cat', [join(otherJob, 'secret.txt')])).stdout).toContain(OTHER_JOB_SECRET);
    const port = new URL(serverUrl).port;
    expect((await confined(open, '/bin/bash', ['-c', `echo > /dev/tcp/127.0.0.1/${port}`])).code).toBe(0);
    expect((await renderImage(open, join(publicDir, 'public.png'))).code).toBe(0);
    if (isRoot) expect((await renderImage(open, join(otherJob, 'secret.png'))).code).toBe(0);
    // LibreOffice itself (hardened profile and all) embeds a linked image when nothing keeps it from the file or
    // the server.
    serverHits = [];
    const pdf = await convert(
      open,
      'linked.odp',
      odpLinkingImages(MARKER, [`file://${publicDir}/public.svg`, `${serverUrl}/linked.svg`]),
    );
    expect(await pdfText(pdf)).toContain(PUBLIC_SECRET);
    expect(serverHits).toContain('/linked.svg');
  } finally {
    await open.registry.close();
  }
});

describe.each([
  ['the strongest mode', () => strongest],
  ['the container mode (seccomp + Landlock)', () => containerLike],
])('documents converted in %s', (_name, converters) => {
  it('LibreOffice: linked images of another job or elsewhere and an external URL: none embedded, nothing fetched', async () => {
    serverHits = [];
    const pdf = await convert(
      converters(),
      'linked.odp',
      odpLinkingImages(MARKER, [
        `file://${otherJob}/secret.svg`,
        `file://${otherJob}/secret.png`,
        `file://${publicDir}/public.svg`,
        `${serverUrl}/linked.svg`,
      ]),
    );
    const text = await pdfText(pdf);
    expect(text).toContain(MARKER);
    expect(text).not.toContain(OTHER_JOB_SECRET);
    expect(text).not.toContain(PUBLIC_SECRET);
    expect(await imageSizes(pdf)).not.toContain('321x123');
    const include = await pdfText(
      await convert(
        converters(),
        'include.docx',
        docx(
          paragraph(`${MARKER} docx`) +
            `<w:p><w:fldSimple w:instr=' INCLUDETEXT "${otherJob}/secret.txt" '><w:r><w:t>stored include</w:t></w:r></w:fldSimple></w:p>` +
            `<w:p><w:fldSimple w:instr=' INCLUDETEXT "/proc/${process.pid}/environ" '><w:r><w:t>stored environ</w:t></w:r></w:fldSimple></w:p>`,
        ),
      ),
    );
    expect(include).toContain(`${MARKER} docx`);
    expect(include).not.toContain(OTHER_JOB_SECRET);
    expect(include).not.toContain(ENV_SECRET);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(serverHits).toEqual([]);
  });

  it('images: decoded by a renderer process that runs confined and reads no image but its own', async () => {
    const pdf = await convert(converters(), 'own.png', await readFile(join(publicDir, 'public.png')), 'image/png');
    expect(await imageSizes(pdf)).toContain('321x123');
    for (const path of [join(otherJob, 'secret.png'), join(publicDir, 'public.png')]) {
      const result = await renderImage(converters(), path);
      expect(result.code, path).not.toBe(0);
      expect(result.stdout, path).toMatch(/"failure":"corrupt_document","message":"not a readable image/);
    }
    if (converters().isolation.filesystem === 'uid') {
      const owner = (await stat(converters().image.dir)).uid;
      expect(owner).toBe(uidOf(converters().isolation, { uidOffset: SANDBOX_UIDS.image }));
    }
  });

  it('Chromium: file:// references to another job and external URLs bring nothing in', async () => {
    serverHits = [];
    const html = `<html><head><link rel="stylesheet" href="${serverUrl}/style.css"></head><body><p>${MARKER} page</p>
      <img src="file://${otherJob}/secret.png"><iframe src="file://${otherJob}/secret.txt"></iframe>
      <iframe src="file://${publicDir}/public.txt"></iframe><img src="${serverUrl}/pixel.svg"></body></html>`;
    const pdf = await convert(converters(), 'page.html', html, 'text/html');
    const text = await pdfText(pdf);
    expect(text).toContain(`${MARKER} page`);
    expect(text).not.toContain(OTHER_JOB_SECRET);
    expect(text).not.toContain(PUBLIC_SECRET);
    expect(await imageSizes(pdf)).not.toContain('321x123');
    expect(serverHits).toEqual([]);
  });
});

describe.runIf(isRoot)('who the converters run as (root worker)', () => {
  it("soffice runs as its slot's uid, in a network namespace of its own, with no privileges and a clean environment", async () => {
    await convert(strongest, 'probe.docx', docx(paragraph(`${MARKER} probe`)));
    const slot = strongest.office.state()[0]!;
    const status = await readFile(`/proc/${slot.sofficePid}/status`, 'utf8');
    const uid = String(uidOf(strongest.isolation, { uidOffset: SANDBOX_UIDS.officeSlot(0) }));
    expect(statusField(status, 'Uid').split(/\s+/)).toEqual([uid, uid, uid, uid]);
    expect(statusField(status, 'Gid').split(/\s+/)[0]).toBe(uid);
    expect(statusField(status, 'Groups')).toBe('');
    expect(statusField(status, 'NoNewPrivs')).toBe('1');
    expect(statusField(status, 'CapEff')).toBe('0000000000000000');
    expect(await readlink(`/proc/${slot.sofficePid}/ns/net`)).not.toBe(await readlink('/proc/self/ns/net'));
    expect(await readFile(`/proc/${slot.sofficePid}/environ`, 'utf8')).not.toContain(ENV_SECRET);
  });

  it('Chromium runs as its own uid with its own sandbox: renderers in a user namespace of their own, under seccomp', async () => {
    await convert(strongest, 'probe.html', `<p>${MARKER}</p>`, 'text/html');
    const browser = (await strongest.chromium.browserPid())!;
    const uid = String(uidOf(strongest.isolation, { uidOffset: SANDBOX_UIDS.chromium }));
    expect(statusField(await readFile(`/proc/${browser}/status`, 'utf8'), 'Uid').split(/\s+/)[0]).toBe(uid);
    const browserUserNs = await readlink(`/proc/${browser}/ns/user`);
    // The sandboxed zygote (renderers fork from it) lives in a user namespace of its own.
    const zygotes = await browserProcesses(
      browser,
      (args) => args.includes('--type=zygote') && !args.includes('--no-zygote-sandbox'),
    );
    expect(zygotes.length).toBeGreaterThan(0);
    for (const pid of zygotes) expect(await readlink(`/proc/${pid}/ns/user`)).not.toBe(browserUserNs);
    // A renderer: the spare tab the converter opens for the next document has one. It may have only just been
    // forked, and a renderer installs its seccomp filter itself, early in its start: give it a moment.
    const renderers = await browserProcesses(browser, (args) => args.includes('--type=renderer'));
    expect(renderers.length).toBeGreaterThan(0);
    for (const pid of renderers) {
      expect(await readlink(`/proc/${pid}/ns/user`)).not.toBe(browserUserNs);
      await expect
        .poll(async () => statusField(await readFile(`/proc/${pid}/status`, 'utf8'), 'Seccomp'), { timeout: 5_000 })
        .toBe('2');
    }
  });

  it('in the container mode soffice keeps the worker uid but runs under the seccomp filter', async () => {
    await convert(containerLike, 'probe.docx', docx(paragraph(`${MARKER} probe`)));
    const status = await readFile(`/proc/${containerLike.office.state()[0]!.sofficePid}/status`, 'utf8');
    expect(statusField(status, 'Seccomp')).toBe('2');
    expect(statusField(status, 'NoNewPrivs')).toBe('1');
  });
});
