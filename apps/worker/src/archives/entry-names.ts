/**
 * Archive entry names from artifact filenames. Filenames are attacker-influenced (an agent or a client
 * chose them), and every unzip tool on every system must extract the archive into one folder and
 * nowhere else, without one entry overwriting another.
 */
export const MAX_ENTRY_NAME_BYTES = 255;
export const FALLBACK_ENTRY_NAME = 'file';
/** A tail longer than this after the last dot is not an extension worth keeping whole. */
const MAX_EXTENSION_BYTES = 32;

/**
 * Path separators; the characters Windows refuses in a name (`:` also makes drive letters and NTFS
 * streams); C0, DEL and C1 controls; bidi controls and marks (they can make `exe.txt` read as `txt.exe`).
 */
const UNSAFE_CHARACTERS = /[/\\:*?"<>|\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;
/** Device names Windows opens instead of a file, with or without an extension. */
const WINDOWS_RESERVED = /^(con|prn|aux|nul|conin\$|conout\$|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$/iu;

/** Half of a surrogate pair cannot be written as UTF-8: it becomes U+FFFD, as Buffer would make it. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

const byteLength = (text: string) => Buffer.byteLength(text, 'utf8');

/** The longest prefix of `text` that fits in `maxBytes` of UTF-8, cut between code points. */
function cutToBytes(text: string, maxBytes: number): string {
  let out = '';
  let used = 0;
  for (const char of text) {
    const size = byteLength(char);
    if (used + size > maxBytes) break;
    out += char;
    used += size;
  }
  return out;
}

/** `report.final.md` → [`report.final`, `.md`]; a leading dot or an over-long tail is no extension. */
export function splitExtension(name: string): [stem: string, extension: string] {
  const dot = name.lastIndexOf('.');
  if (dot <= 0 || dot === name.length - 1 || byteLength(name.slice(dot)) > MAX_EXTENSION_BYTES) return [name, ''];
  return [name.slice(0, dot), name.slice(dot)];
}

/** Cuts `stem` so that stem + suffix + extension fit in 255 bytes; the extension is kept whole. */
function fit(stem: string, suffix: string, extension: string): string {
  return cutToBytes(stem, MAX_ENTRY_NAME_BYTES - byteLength(suffix) - byteLength(extension)) + suffix + extension;
}

/** Windows drops trailing dots and spaces, so `a.` and `a` would land on one file; `..x` reads as a parent. */
const guardDots = (name: string) =>
  name.replace(/^\.{2,}/u, (dots) => '_'.repeat(dots.length)).replace(/[. ]+$/u, (tail) => '_'.repeat(tail.length));

/**
 * One safe relative entry name for one filename: a single path segment with no separator, `..`,
 * drive letter, control or bidi character, not a Windows device name, at most 255 bytes of UTF-8 with
 * its extension kept, never empty. Unsafe characters are replaced (by `_`), not dropped, so names stay
 * recognisable and two different names rarely collapse into one.
 */
export function safeEntryName(filename: string): string {
  let name = filename.replace(LONE_SURROGATE, '\ufffd').normalize('NFC').replace(UNSAFE_CHARACTERS, '_');
  if (name.trim() === '') return FALLBACK_ENTRY_NAME;
  name = guardDots(name);
  if (WINDOWS_RESERVED.test(name)) name = `_${name}`;
  if (byteLength(name) > MAX_ENTRY_NAME_BYTES) {
    const [stem, extension] = splitExtension(name);
    name = guardDots(fit(stem, '', extension));
  }
  return name;
}

/** Two names that one file system would take for the same file: Unicode-normalised, case folded. */
const collisionKey = (name: string) => name.normalize('NFC').toLowerCase();

/**
 * Gives each artifact of an archive its entry name, in order: the first `a.txt` keeps its name, the
 * next ones become `a (2).txt`, `a (3).txt` (compared case-insensitively, so they also extract apart on
 * Windows and macOS). A generated name that an artifact already holds is skipped. Memory grows with
 * the number of entries, as the ZIP's central directory does anyway.
 */
export class EntryNameAllocator {
  private readonly taken = new Set<string>();
  /** Next counter to try per base name, so 10,000 copies of `report.md` cost 10,000 steps, not 50 million. */
  private readonly nextCounter = new Map<string, number>();

  allocate(filename: string): string {
    const safe = safeEntryName(filename);
    const base = collisionKey(safe);
    let candidate = safe;
    if (this.taken.has(base)) {
      const [stem, extension] = splitExtension(safe);
      let counter = this.nextCounter.get(base) ?? 2;
      do {
        candidate = fit(stem, ` (${counter})`, extension);
        counter += 1;
      } while (this.taken.has(collisionKey(candidate)));
      this.nextCounter.set(base, counter);
    }
    this.taken.add(collisionKey(candidate));
    return candidate;
  }
}
