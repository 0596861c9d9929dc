import { chmod, lstat, mkdir, mkdtemp, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { converterFilesFor, dependencyClosure, othersCanRead, type ConverterFiles } from './converter-files';

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
      await mkdir(join(nodeModules, '@img/sharp-x/lib'));
      await writeFile(join(nodeModules, '@img/sharp-x/lib/private.node'), 'binary', { mode: 0o700 });
      await writeFile(join(nodeModules, '@img/sharp-x/lib/shared.so'), 'library', { mode: 0o644 });
      await writeFile(join(nodeModules, '@img/sharp-x/lib/writable.js'), 'anyone may write', { mode: 0o666 });
      await chmod(join(nodeModules, '@img/sharp-x/lib/writable.js'), 0o666);
      await symlink('/etc/hostname', join(nodeModules, '@img/sharp-x/lib/elsewhere'));
      await pkg(nodeModules, 'pdf-lib', { dependencies: { tslib: '1' } });
      await pkg(nodeModules, 'tslib', {});
      await pkg(nodeModules, 'unrelated', {});
      await writeFile(join(checkout, 'image-render.cjs'), 'render', { mode: 0o644 });
      await writeFile(join(checkout, 'uno-bridge.py'), 'bridge', { mode: 0o600 });
      await writeFile(join(checkout, 'node'), 'node binary', { mode: 0o755 });
    }
    await chmod(join(root, 'open'), 0o755);
    await chmod(join(root, 'closed'), 0o700);
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  const sources = (where: string): ConverterFiles => ({
    imageRenderScript: join(root, where, 'checkout', 'image-render.cjs'),
    nodeModules: join(root, where, 'checkout', 'node_modules'),
    unoBridgeScript: join(root, where, 'checkout', 'uno-bridge.py'),
    node: join(root, where, 'checkout', 'node'),
  });

  it('knows a path under a directory others cannot enter, and an executable they cannot run', async () => {
    expect(await othersCanRead(sources('open').imageRenderScript)).toBe(true);
    expect(await othersCanRead(sources('open').node)).toBe(true);
    expect(await othersCanRead(sources('closed').imageRenderScript)).toBe(false);
    expect(await othersCanRead(join(root, 'open', 'missing'))).toBe(false);
    const ownerOnly = join(root, 'open', 'owner-only');
    await writeFile(ownerOnly, 'x', { mode: 0o744 });
    await chmod(ownerOnly, 0o744);
    expect(await othersCanRead(ownerOnly)).toBe(false);
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

  it('keeps the files where they are when converters keep the worker uid', async () => {
    for (const filesystem of ['landlock', 'none'] as const)
      expect(await converterFilesFor({ filesystem }, join(root, `kept-${filesystem}`), sources('closed'))).toEqual(
        sources('closed'),
      );
  });

  describe.each(['open', 'closed'])('for converters of their own uids, from a checkout others %s', (where) => {
    let staged: ConverterFiles;
    const dir = () => join(root, `staged-${where}`);
    beforeAll(async () => {
      staged = await converterFilesFor({ filesystem: 'uid' }, dir(), sources(where));
    });

    it('stages every file into the directory: nothing is read from the checkout, whoever may enter it', () => {
      expect(staged).toEqual({
        imageRenderScript: join(dir(), 'image-render.cjs'),
        nodeModules: join(dir(), 'node_modules'),
        unoBridgeScript: join(dir(), 'uno-bridge.py'),
        node: where === 'open' ? sources('open').node : join(dir(), 'node'),
      });
    });

    it('where others can read them and not change them, the renderer’s packages first of all', async () => {
      for (const path of Object.values(staged)) expect(await othersCanRead(path), path).toBe(true);
      const lib = join(staged.nodeModules, '@img/sharp-x/lib');
      for (const name of ['shared.so', 'private.node', 'writable.js']) {
        const mode = (await stat(join(lib, name))).mode;
        expect(mode & 0o004, name).toBe(0o004);
        expect(mode & 0o022, name).toBe(0);
      }
      expect((await stat(join(lib, 'private.node'))).mode & 0o777).toBe(0o755);
      expect(await readFile(join(lib, 'writable.js'), 'utf8')).toBe('anyone may write');
      expect(await readFile(staged.unoBridgeScript, 'utf8')).toBe('bridge');
      expect(await othersCanRead(join(staged.nodeModules, 'unrelated'))).toBe(false);
    });

    it('links what others may already read, copies the rest, and never follows a link out', async () => {
      const from = join(sources(where).nodeModules, '@img/sharp-x/lib');
      const to = join(staged.nodeModules, '@img/sharp-x/lib');
      const sameFile = async (name: string) => (await stat(join(from, name))).ino === (await stat(join(to, name))).ino;
      expect(await sameFile('shared.so')).toBe(true);
      expect(await sameFile('private.node')).toBe(false);
      expect(await sameFile('writable.js')).toBe(false);
      expect((await lstat(join(to, 'elsewhere'))).isSymbolicLink()).toBe(true);
      expect(await readlink(join(to, 'elsewhere'))).toBe('/etc/hostname');
    });
  });

  it('starts afresh on every start: nothing planted in the directory before survives', async () => {
    const dir = join(root, 'staged-again');
    await mkdir(join(dir, 'node_modules', 'planted'), { recursive: true });
    await converterFilesFor({ filesystem: 'uid' }, dir, sources('closed'));
    await expect(stat(join(dir, 'node_modules', 'planted'))).rejects.toThrow();
    await converterFilesFor({ filesystem: 'uid' }, dir, sources('closed'));
    expect((await stat(dir)).mode & 0o777).toBe(0o755);
  });
});
