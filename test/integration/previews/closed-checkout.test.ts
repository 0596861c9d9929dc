import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { access, chmod, cp, mkdtemp, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type * as Registry from '../../../apps/worker/src/previews/converter.registry';
import { CONVERTER_SOURCES, type PreviewConverters } from '../../../apps/worker/src/previews/converter.registry';
import { dependencyClosure } from '../../../apps/worker/src/previews/sandbox/converter-files';
import { cleanEnvironment, ProcessRunner, SANDBOX_UIDS } from '../../../apps/worker/src/previews/sandbox/sandbox';
import { docx, paragraph, pdfText } from '../../support/preview-fixtures';

/**
 * Previews from a checkout no converter uid can enter, as a clone under /root, in a Debian 12 home or in a
 * `mktemp -d` is: the built worker (dist/) is copied into a root-owned 0700 directory with the renderer's packages
 * (sharp, pdf-lib and what they load) in that copy's own node_modules, and its converters are made by that code, so
 * every path they derive from where the code lies (the image renderer, LibreOffice's bridge, node_modules) is
 * inside the closed directory. A converter uid that is handed one of those paths instead of the copy the worker
 * stages for it cannot open it and the conversion fails. The rest of node_modules (the worker's own packages,
 * never read by a converter) is found through a link beside the copy. Run as root only: converters get uids of
 * their own when the worker is root.
 */
const run = promisify(execFile);
const isRoot = process.getuid?.() === 0;
const ROOT = join(__dirname, '../../..');
const BUILT_REGISTRY = 'dist/apps/worker/src/previews/converter.registry.js';
const MARKER = `Closed${randomUUID().slice(0, 8)}`;

let closed: string;
let checkout: string;
let work: string;
let converters: PreviewConverters;

const inside = (dir: string, path: string) => !relative(dir, path).startsWith('..');

async function convert(filename: string, bytes: Buffer | string, contentType = ''): Promise<string> {
  const source = join(work, `${randomUUID()}-${filename}`);
  await writeFile(source, bytes);
  const out = join(work, `${randomUUID()}.pdf`);
  const signal = new AbortController().signal;
  await converters.registry.convert({ path: source, filename, contentType }, { path: out }, signal);
  return out;
}

describe.runIf(isRoot)('previews from a checkout in a 0700 directory of root’s', () => {
  beforeAll(async () => {
    await access(join(ROOT, BUILT_REGISTRY)).catch(() => {
      throw new Error(`${BUILT_REGISTRY} is missing: run npm run build first`);
    });
    closed = await mkdtemp(join(tmpdir(), 'uhp-closed-checkout-'));
    await chmod(closed, 0o700);
    checkout = join(closed, 'uhp-files');
    await cp(join(ROOT, 'dist'), join(checkout, 'dist'), { recursive: true });
    for (const name of await dependencyClosure(CONVERTER_SOURCES.nodeModules, ['sharp', 'pdf-lib']))
      await cp(join(CONVERTER_SOURCES.nodeModules, name), join(checkout, 'node_modules', name), { recursive: true });
    await symlink(CONVERTER_SOURCES.nodeModules, join(closed, 'node_modules'));
    work = await mkdtemp(join(tmpdir(), 'uhp-closed-checkout-work-'));
    await chmod(work, 0o711); // converters of other uids pass through to their own dirs beneath it
    const built = createRequire(__filename)(join(checkout, BUILT_REGISTRY)) as typeof Registry;
    converters = await built.createPreviewConverters({ workDir: join(work, 'converters'), office: { poolSize: 1 } });
  });

  afterAll(async () => {
    await converters?.registry.close();
    for (const dir of [closed, work]) if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the converters run as uids of their own, which cannot enter the checkout: they read staged copies', async () => {
    expect(converters.isolation.filesystem).toBe('uid');
    expect((await stat(closed)).mode & 0o777).toBe(0o700);
    const { image } = converters;
    expect(inside(closed, image.files.imageRenderScript)).toBe(false);
    for (const path of [image.files.imageRenderScript, image.files.nodeModules, ...(image.identity.readable ?? [])])
      expect(inside(checkout, path), path).toBe(false);
    // The control: the renderer's uid, with no Landlock in the way, reads the staged script and not the one in the
    // checkout the worker's code lies in.
    const uidOnly = new ProcessRunner(
      { ...converters.isolation, network: 'none', landlockAbi: 0 },
      converters.runner.launcher,
    );
    const cat = (path: string) =>
      uidOnly.run({
        command: '/bin/cat',
        args: [path],
        identity: { uidOffset: SANDBOX_UIDS.image, writable: [image.dir] },
        limits: {},
        env: cleanEnvironment(image.dir),
        cwd: image.dir,
        timeoutMs: 10_000,
      });
    const inCheckout = join(checkout, 'dist/apps/worker/src/previews/image/image-render.cjs');
    const denied = await cat(inCheckout);
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toMatch(/Permission denied/);
    const staged = await cat(image.files.imageRenderScript);
    expect(staged.code, staged.stderr).toBe(0);
    expect(staged.stdout).toContain("require('sharp')");
  });

  it('an image becomes a PDF, rendered by the confined renderer', async () => {
    expect(await converters.image.available()).toEqual({ ok: true });
    const png = await sharp({ create: { width: 321, height: 123, channels: 3, background: '#08c' } })
      .png()
      .toBuffer();
    const pdf = await convert('closed.png', png, 'image/png');
    const { stdout } = await run('pdfimages', ['-list', pdf]);
    expect(stdout).toMatch(/\s321\s+123\s/);
  });

  it('an office document becomes a PDF, through LibreOffice driven by its bridge script', async () => {
    const pdf = await convert('closed.docx', docx(paragraph(`${MARKER} from a closed checkout`)));
    expect(await pdfText(pdf)).toContain(`${MARKER} from a closed checkout`);
  });
});
