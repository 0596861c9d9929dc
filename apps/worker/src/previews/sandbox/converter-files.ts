import { constants } from 'node:fs';
import { chmod, copyFile, link, mkdir, readdir, readFile, readlink, rm, stat, symlink } from 'node:fs/promises';
import { basename, dirname, join, parse } from 'node:path';
import type { IsolationMode } from './sandbox';

/**
 * Files converters run or read that are not the system's: the image renderer, the packages it loads and the Node
 * binary it runs on, LibreOffice's bridge script.
 */
export interface ConverterFiles {
  imageRenderScript: string;
  /** The node_modules the renderer's require() finds sharp and pdf-lib in (beside or above the script). */
  nodeModules: string;
  unoBridgeScript: string;
  /** The Node binary the image renderer runs on (the worker's own). */
  node: string;
}

/** What the image renderer loads; everything they depend on comes along. */
const RENDERER_PACKAGES = ['sharp', 'pdf-lib'];

/**
 * Whether a process of another uid and group could read `path` (and run it, when it is executable): the path
 * itself readable by others, every directory above searchable by others.
 */
export async function othersCanRead(path: string): Promise<boolean> {
  try {
    const target = await stat(path);
    const wanted = target.isDirectory() || (target.mode & 0o100) !== 0 ? 0o005 : 0o004;
    if ((target.mode & wanted) !== wanted) return false;
    for (let dir = dirname(path); ; dir = dirname(dir)) {
      if (((await stat(dir)).mode & 0o001) === 0) return false;
      if (dir === parse(dir).root) return true;
    }
  } catch {
    return false;
  }
}

/** The packages `roots` with every dependency (and optional one installed) that `nodeModules` holds, each once. */
export async function dependencyClosure(nodeModules: string, roots: string[]): Promise<string[]> {
  const seen = new Set<string>();
  const pending = [...roots];
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (seen.has(name)) continue;
    let manifest: { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> };
    try {
      manifest = JSON.parse(await readFile(join(nodeModules, name, 'package.json'), 'utf8'));
    } catch {
      continue; // an optional dependency of another platform, not installed
    }
    seen.add(name);
    pending.push(...Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies }));
  }
  return [...seen].sort();
}

/**
 * Puts the file `source` at `target` for other uids to read, never writable by them: a hard link when the file
 * already is (readable by others, writable by its owner alone) and on the same filesystem, which costs nothing
 * (libvips and pdf-lib are large, and every worker start stages them); a copy readable by
 * all otherwise. Either way the converter reaches it through `target` alone, never through the checkout's
 * directories.
 */
async function stageFile(source: string, target: string): Promise<void> {
  const { mode } = await stat(source);
  if ((mode & 0o004) !== 0 && (mode & 0o022) === 0) {
    try {
      await link(source, target);
      return;
    } catch {
      // another filesystem (EXDEV) or links refused: copy it
    }
  }
  await copyFile(source, target, constants.COPYFILE_EXCL);
  await chmod(target, (mode & 0o111) !== 0 ? 0o755 : 0o644);
}

/** A directory tree staged file by file (stageFile) under new directories of root's, 0755. */
async function stageTree(source: string, target: string): Promise<void> {
  await mkdir(target, { mode: 0o755 });
  await chmod(target, 0o755);
  const entries = await readdir(source, { withFileTypes: true });
  await Promise.all(
    entries.map(async (entry) => {
      const from = join(source, entry.name);
      const to = join(target, entry.name);
      // A link is kept a link: following it could copy anything on the host into a directory all uids read.
      if (entry.isSymbolicLink()) await symlink(await readlink(from), to);
      else if (entry.isDirectory()) await stageTree(from, to);
      else if (entry.isFile()) await stageFile(from, to);
    }),
  );
}

/**
 * The converters' files as their uids can read them. A converter that runs as a uid of its own (`uid` mode)
 * reads no file of the project where it lies: a checkout under a directory only its owner may enter (`/root`, a
 * Debian 12 home, a `mktemp -d`, all 0700) would hide it, and a converter uid has no business in the checkout
 * anyway. So, at start, the worker stages them into `dir` (root's, 0755, beneath the work dir): the two scripts,
 * the renderer's packages with all they depend on (the renderer's require() finds them beside it, so nothing is
 * bundled and the native sharp and libvips binaries come as they are), and the Node binary when other uids cannot
 * reach it where it is installed (nvm under /root). Landlock's read-only rules then name the staged copies only.
 * In the other modes converters keep the worker's uid, which reads the files where they are.
 */
export async function converterFilesFor(
  mode: Pick<IsolationMode, 'filesystem'>,
  dir: string,
  sources: ConverterFiles,
): Promise<ConverterFiles> {
  if (mode.filesystem !== 'uid') return sources;
  await rm(dir, { recursive: true, force: true });
  await mkdir(join(dir, 'node_modules'), { recursive: true, mode: 0o755 });
  await chmod(dir, 0o755);
  await chmod(join(dir, 'node_modules'), 0o755);
  const staged: ConverterFiles = {
    imageRenderScript: join(dir, basename(sources.imageRenderScript)),
    nodeModules: join(dir, 'node_modules'),
    unoBridgeScript: join(dir, basename(sources.unoBridgeScript)),
    node: (await othersCanRead(sources.node)) ? sources.node : join(dir, 'node'),
  };
  await stageFile(sources.imageRenderScript, staged.imageRenderScript);
  await stageFile(sources.unoBridgeScript, staged.unoBridgeScript);
  if (staged.node !== sources.node) await stageFile(sources.node, staged.node);
  const packages = await dependencyClosure(sources.nodeModules, RENDERER_PACKAGES);
  // A scoped package (@img/sharp-linux-x64) goes beneath its scope's directory.
  for (const scope of new Set(packages.map((name) => dirname(join(staged.nodeModules, name))))) {
    await mkdir(scope, { recursive: true, mode: 0o755 });
    await chmod(scope, 0o755);
  }
  await Promise.all(packages.map((name) => stageTree(join(sources.nodeModules, name), join(staged.nodeModules, name))));
  return staged;
}
