import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync, lstatSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, isAbsolute } from 'node:path';

export interface CentralEntry {
  name: string;
  nameBytes: Buffer;
  utf8Flag: boolean;
  method: number;
  crc32: number;
  compressedSize: number;
  size: number;
}

/** The central directory of a ZIP (ZIP64 aware): what every unzip tool trusts for names and sizes. */
export function centralDirectory(zip: Buffer): CentralEntry[] {
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 65535); i--) {
    if (zip.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error('no end of central directory record');
  let total = zip.readUInt16LE(eocd + 10);
  let offset = zip.readUInt32LE(eocd + 16);
  if (eocd >= 20 && zip.readUInt32LE(eocd - 20) === 0x07064b50) {
    const zip64 = Number(zip.readBigUInt64LE(eocd - 20 + 8));
    total = Number(zip.readBigUInt64LE(zip64 + 32));
    offset = Number(zip.readBigUInt64LE(zip64 + 48));
  }
  const entries: CentralEntry[] = [];
  for (let k = 0, p = offset; k < total; k++) {
    if (zip.readUInt32LE(p) !== 0x02014b50) throw new Error(`central directory entry ${k} missing`);
    const flags = zip.readUInt16LE(p + 8);
    const nameLength = zip.readUInt16LE(p + 28);
    const extraLength = zip.readUInt16LE(p + 30);
    const commentLength = zip.readUInt16LE(p + 32);
    const nameBytes = zip.subarray(p + 46, p + 46 + nameLength);
    entries.push({
      name: nameBytes.toString('utf8'),
      nameBytes,
      utf8Flag: (flags & 0x800) !== 0,
      method: zip.readUInt16LE(p + 10),
      crc32: zip.readUInt32LE(p + 16),
      compressedSize: zip.readUInt32LE(p + 20),
      size: zip.readUInt32LE(p + 24),
    });
    p += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

/** Every regular file under `dir`, as paths relative to it; throws on anything but files and folders. */
function filesUnder(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = lstatSync(path);
    if (stat.isDirectory()) out.push(...filesUnder(path, base));
    else if (stat.isFile()) out.push(relative(base, path));
    else throw new Error(`unzip made something that is not a file: ${path}`);
  }
  return out;
}

/**
 * Extracts the ZIP with the system `unzip` into a fresh temporary folder and returns each extracted
 * file's bytes by its path relative to that folder. Fails if unzip complains or anything lands
 * outside the folder.
 */
export function extractWithUnzip(zip: Buffer): Map<string, Buffer> {
  const work = mkdtempSync(join(tmpdir(), 'uhp-archive-'));
  const zipPath = join(work, 'archive.zip');
  const out = join(work, 'out');
  try {
    writeFileSync(zipPath, zip);
    const run = spawnSync('unzip', ['-qq', '-o', zipPath, '-d', out], { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`unzip exited ${run.status}: ${run.stderr}${run.stdout}`);
    const siblings = readdirSync(work).filter((name) => name !== 'archive.zip' && name !== 'out');
    if (siblings.length > 0) throw new Error(`unzip wrote outside its folder: ${siblings.join(', ')}`);
    const root = realpathSync(out);
    const files = new Map<string, Buffer>();
    for (const path of filesUnder(root)) {
      const real = realpathSync(join(root, path));
      const inside = relative(root, real);
      if (inside.startsWith('..') || isAbsolute(inside)) throw new Error(`extracted path escapes the folder: ${path}`);
      files.set(path, readFileSync(real));
    }
    return files;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** What `unzip -l` says about the ZIP (stdout and stderr). */
export function listWithUnzip(zip: Buffer): string {
  const work = mkdtempSync(join(tmpdir(), 'uhp-archive-'));
  try {
    writeFileSync(join(work, 'archive.zip'), zip);
    const run = spawnSync('unzip', ['-l', join(work, 'archive.zip')], { encoding: 'utf8' });
    return `${run.stdout}${run.stderr}`;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
