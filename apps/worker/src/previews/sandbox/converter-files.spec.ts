import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { converterFilesFor, dependencyClosure, othersCanRead } from './converter-files';

describe('the converters’ own files, where their uids can read them', () => {
  let root: string;
  const pkg = (nodeModules: string, name: string, manifest: object) =>
    mkdir(join(nodeModules, name), { recursive: true }).then(() =>
      writeFile(join(nodeModules, name, 'package.json'), JSON.stringify({ name, ...manifest })),
    );

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'converter-files-'));
    await chmod(root, 0o755);
    for (const where of ['open', 'closed']) {
      const checkout = join(root, where, 'checkout');
      const nodeModules = join(checkout, 'node_modules');
      await pkg(nodeModules, 'sharp', {
        dependencies: { color: '1' },
        optionalDependencies: { '@img/sharp-x': '1', '@img/sharp-y': '1' },
      });
      await pkg(nodeModules, 'color', { dependencies: { sharp: '1' } });
      await pkg(nodeModules, '@img/sharp-x', {});
      await pkg(nodeModules, 'pdf-lib', { dependencies: { tslib: '1' } });
      await pkg(nodeModules, 'tslib', {});
      await pkg(nodeModules, 'unrelated', {});
      await writeFile(join(checkout, 'image-render.cjs'), 'render');
      await writeFile(join(checkout, 'uno-bridge.py'), 'bridge');
    }
    await chmod(join(root, 'open'), 0o755);
    await chmod(join(root, 'closed'), 0o700);
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  const sources = (where: string) => ({
    imageRenderScript: join(root, where, 'checkout', 'image-render.cjs'),
    nodeModules: join(root, where, 'checkout', 'node_modules'),
    unoBridgeScript: join(root, where, 'checkout', 'uno-bridge.py'),
  });

  it('knows a path under a directory others cannot enter', async () => {
    expect(await othersCanRead(sources('open').imageRenderScript)).toBe(true);
    expect(await othersCanRead(sources('closed').imageRenderScript)).toBe(false);
    expect(await othersCanRead(join(root, 'open', 'missing'))).toBe(false);
  });

  it('takes the packages with their dependencies and installed optional ones, each once, and nothing else', async () => {
    expect(await dependencyClosure(sources('open').nodeModules, ['sharp', 'pdf-lib'])).toEqual([
      '@img/sharp-x',
      'color',
      'pdf-lib',
      'sharp',
      'tslib',
    ]);
  });

  it('uses a reachable checkout as it is, and copies from a closed one into a directory others can read', async () => {
    expect(await converterFilesFor({ filesystem: 'uid' }, join(root, 'staged-open'), sources('open'))).toEqual(
      sources('open'),
    );
    expect(await converterFilesFor({ filesystem: 'landlock' }, join(root, 'staged-x'), sources('closed'))).toEqual(
      sources('closed'),
    );
    const staged = await converterFilesFor({ filesystem: 'uid' }, join(root, 'staged'), sources('closed'));
    expect(staged).toEqual({
      imageRenderScript: join(root, 'staged', 'image-render.cjs'),
      nodeModules: join(root, 'staged', 'node_modules'),
      unoBridgeScript: join(root, 'staged', 'uno-bridge.py'),
    });
    for (const path of Object.values(staged)) expect(await othersCanRead(path)).toBe(true);
    expect(await readFile(join(staged.nodeModules, '@img/sharp-x/package.json'), 'utf8')).toContain('sharp-x');
    expect(await othersCanRead(join(staged.nodeModules, 'unrelated'))).toBe(false);
    expect(await readFile(staged.unoBridgeScript, 'utf8')).toBe('bridge');
  });
});
