import { describe, expect, it } from 'vitest';
import { acceptFilename, truncateUtf8 } from './filename';

describe('acceptFilename', () => {
  it('keeps the last path segment of either separator', () => {
    expect(acceptFilename('../../etc/passwd')).toBe('passwd');
    expect(acceptFilename('C:\\Users\\me\\report.pdf')).toBe('report.pdf');
    expect(acceptFilename('plain.txt')).toBe('plain.txt');
  });

  it('keeps percent sequences as sent', () => {
    expect(acceptFilename('a%2F..%2Fb.txt')).toBe('a%2F..%2Fb.txt');
  });

  it('normalises to NFC', () => {
    expect(acceptFilename('re\u0301sume\u0301.txt')).toBe('r\u00e9sum\u00e9.txt');
  });

  it('cuts to 255 bytes on a character boundary', () => {
    const name = acceptFilename('日'.repeat(200));
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(255);
    expect(name).toBe('日'.repeat(85));
    expect(truncateUtf8('a😀', 4)).toBe('a');
  });

  it.each([
    '',
    '.',
    '..',
    'dir/',
    'a/..',
    'tab\there.txt',
    'nul\u0000.txt',
    'del\u007f',
    'c1\u0085.txt',
    'evil\u202egnp.exe',
    'iso\u2066.txt',
  ])('rejects %j', (name) => {
    expect(() => acceptFilename(name)).toThrow(expect.objectContaining({ code: 'invalid_filename', param: 'file' }));
  });

  it('accepts emoji and other scripts', () => {
    expect(acceptFilename('résumé-日本語-😀.txt')).toBe('résumé-日本語-😀.txt');
  });
});
