import { chmod, copyFile, cp, mkdir, readFile, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, parse } from 'node:path';
import type { IsolationMode } from './sandbox';

/** Files of this project that converters read: the image renderer with the packages it loads, LibreOffice's bridge. */
export interface ConverterFiles {
  imageRenderScript: string;
  /** The node_modules the renderer's require() finds sharp and pdf-lib in (beside or above the script). */
  nodeModules: string;
  unoBridgeScript: string;
}

/** What the image renderer loads; everything they depend on comes along. */
const RENDERER_PACKAGES = ['sharp', 'pdf-lib'];

/** Whether a process of another uid and group could read `path`: every directory above searchable by others. */
export async function othersCanRead(path: string): Promise<boolean> {
  try {
    const target = await stat(path);
    if ((target.mode & (target.isDirectory() ? 0o005 : 0o004)) !== (target.isDirectory() ? 0o005 : 0o004)) return false;
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
 * The converters' files as their uids can read them. A converter that runs as a uid of its own reads these
 * files as that uid; a checkout under a directory only root may enter (`/root` is 0700, where users clone)
 * hides them, and every image or office preview would fail. Then they are copied once, at start, into
 * `dir` (root's, 0755): the two scripts and the renderer's packages, a few tens of MB. Otherwise, and in
 * the modes where converters keep the worker's uid, they are used where they are.
 */
export async function converterFilesFor(
  mode: Pick<IsolationMode, 'filesystem'>,
  dir: string,
  sources: ConverterFiles,
): Promise<ConverterFiles> {
  if (mode.filesystem !== 'uid') return sources;
  const paths = [sources.imageRenderScript, sources.nodeModules, sources.unoBridgeScript];
  if ((await Promise.all(paths.map(othersCanRead))).every(Boolean)) return sources;
  await rm(dir, { recursive: true, force: true });
  await mkdir(join(dir, 'node_modules'), { recursive: true, mode: 0o755 });
  await chmod(dir, 0o755);
  const staged: ConverterFiles = {
    imageRenderScript: join(dir, basename(sources.imageRenderScript)),
    nodeModules: join(dir, 'node_modules'),
    unoBridgeScript: join(dir, basename(sources.unoBridgeScript)),
  };
  await copyFile(sources.imageRenderScript, staged.imageRenderScript);
  await copyFile(sources.unoBridgeScript, staged.unoBridgeScript);
  for (const name of await dependencyClosure(sources.nodeModules, RENDERER_PACKAGES))
    await cp(join(sources.nodeModules, name), join(staged.nodeModules, name), { recursive: true });
  for (const path of [staged.imageRenderScript, staged.unoBridgeScript]) await chmod(path, 0o644);
  return staged;
}
