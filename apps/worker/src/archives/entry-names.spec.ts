import { describe, expect, it } from 'vitest';
import { EntryNameAllocator, FALLBACK_ENTRY_NAME, MAX_ENTRY_NAME_BYTES, safeEntryName } from './entry-names';

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

/** What the conformance suite and a careful unzip would call unsafe. */
function isSafe(name: string): boolean {
  return (
    name.length > 0 &&
    !/[/\\]/.test(name) &&
    name !== '.' &&
    name !== '..' &&
    !name.startsWith('..') &&
    !/^[A-Za-z]:/.test(name) &&
    !/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/.test(name) &&
    bytes(name) <= MAX_ENTRY_NAME_BYTES
  );
}

const HOSTILE = [
  '../../etc/passwd',
  '..\\..\\windows\\system32\\evil.dll',
  '/etc/shadow',
  '\\\\server\\share\\x.txt',
  'C:\\Users\\x.txt',
  'c:evil.txt',
  '..',
  '.',
  '...',
  '..hidden',
  'a/../../b.txt',
  'name\u0000.txt',
  'line\nbreak.txt',
  'tab\there.txt',
  'del\u007f.txt',
  'c1\u0085.txt',
  'invoice\u202egpj.exe',
  'isolate\u2066x\u2069.txt',
  '',
  '   ',
  'trailing. . ',
  'ends-with-dot.',
  'CON',
  'con.txt',
  'NUL.tar.gz',
  'com1',
  'LPT9.log',
  'aux.',
  `${'x'.repeat(300)}.txt`,
  '😀'.repeat(80) + '.md',
  'pipe|star*question?.txt',
];

describe('safeEntryName', () => {
  it.each(HOSTILE)('makes %j safe', (name) => {
    const safe = safeEntryName(name);
    expect(isSafe(safe), `${JSON.stringify(name)} → ${JSON.stringify(safe)}`).toBe(true);
  });

  it('keeps ordinary names, dotfiles and Unicode as they are (NFC)', () => {
    expect(safeEntryName('report.md')).toBe('report.md');
    expect(safeEntryName('.env')).toBe('.env');
    expect(safeEntryName('ünïcødé-日本.txt')).toBe('ünïcødé-日本.txt');
    expect(safeEntryName('cafe\u0301.txt')).toBe('caf\u00e9.txt');
    expect(safeEntryName('😀 smile.png')).toBe('😀 smile.png');
  });

  it('replaces rather than drops, and falls back to "file" only when nothing is left', () => {
    expect(safeEntryName('../../etc/passwd')).toBe('___.._etc_passwd');
    expect(safeEntryName('a\u0000b.txt')).toBe('a_b.txt');
    expect(safeEntryName('')).toBe(FALLBACK_ENTRY_NAME);
    expect(safeEntryName('  ')).toBe(FALLBACK_ENTRY_NAME);
    expect(safeEntryName('..')).toBe('__');
    expect(safeEntryName('C:\\x.txt')).toBe('C__x.txt');
  });

  it('makes Windows device names ordinary files', () => {
    expect(safeEntryName('CON')).toBe('_CON');
    expect(safeEntryName('con.txt')).toBe('_con.txt');
    expect(safeEntryName('NUL.tar.gz')).toBe('_NUL.tar.gz');
    expect(safeEntryName('console.txt')).toBe('console.txt');
  });

  it('cuts long names to 255 bytes on a character boundary and keeps the extension', () => {
    const long = safeEntryName(`${'x'.repeat(300)}.txt`);
    expect(bytes(long)).toBe(255);
    expect(long.endsWith('.txt')).toBe(true);
    const emoji = safeEntryName(`${'😀'.repeat(80)}.md`);
    expect(bytes(emoji)).toBeLessThanOrEqual(255);
    expect(emoji.endsWith('.md')).toBe(true);
    expect(Buffer.from(emoji, 'utf8').toString('utf8')).toBe(emoji); // no half of a surrogate pair
    expect([...emoji.slice(0, -3)].every((char) => char === '😀')).toBe(true);
  });
});

describe('EntryNameAllocator', () => {
  it('numbers duplicates "name (2).ext", "name (3).ext" in order', () => {
    const names = new EntryNameAllocator();
    expect(['a.txt', 'a.txt', 'a.txt', 'b'].map((n) => names.allocate(n))).toEqual([
      'a.txt',
      'a (2).txt',
      'a (3).txt',
      'b',
    ]);
    expect(names.allocate('b')).toBe('b (2)');
  });

  it('treats names that differ only in case or normalisation as duplicates', () => {
    const names = new EntryNameAllocator();
    expect(names.allocate('Report.MD')).toBe('Report.MD');
    expect(names.allocate('report.md')).toBe('report (2).md');
    expect(names.allocate('café.txt')).toBe('café.txt');
    expect(names.allocate('cafe\u0301.txt')).toBe('café (2).txt');
  });

  it('skips a generated name that an artifact already holds, whichever comes first', () => {
    const first = new EntryNameAllocator();
    expect(['a.txt', 'a (2).txt', 'a.txt'].map((n) => first.allocate(n))).toEqual(['a.txt', 'a (2).txt', 'a (3).txt']);
    const second = new EntryNameAllocator();
    expect(['a.txt', 'a.txt', 'a (2).txt'].map((n) => second.allocate(n))).toEqual([
      'a.txt',
      'a (2).txt',
      'a (2) (2).txt',
    ]);
  });

  it('keeps numbered long names within 255 bytes with the extension', () => {
    const names = new EntryNameAllocator();
    const long = `${'y'.repeat(300)}.csv`;
    const first = names.allocate(long);
    const second = names.allocate(long);
    expect(second).not.toBe(first);
    expect(bytes(second)).toBeLessThanOrEqual(255);
    expect(second.endsWith(' (2).csv')).toBe(true);
  });

  it('gives every one of a hostile set a distinct safe name, and stays fast with many copies', () => {
    const names = new EntryNameAllocator();
    const out = [...HOSTILE, ...HOSTILE].map((n) => names.allocate(n));
    expect(new Set(out.map((n) => n.toLowerCase())).size).toBe(out.length);
    for (const name of out) expect(isSafe(name)).toBe(true);
    const started = Date.now();
    for (let i = 0; i < 20_000; i++) names.allocate('report.md');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(names.allocate('report.md')).toBe('report (20001).md');
  });
});
