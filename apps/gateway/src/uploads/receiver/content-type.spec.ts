import { describe, expect, it } from 'vitest';
import { resolveContentType } from './content-type';

describe('resolveContentType', () => {
  it('keeps a valid declared type', () => {
    expect(resolveContentType('text/html', 'x.bin')).toBe('text/html');
    expect(resolveContentType('Text/Plain; charset=UTF-8', 'x')).toBe('text/plain; charset=utf-8');
    expect(resolveContentType('image/png; name="x"', 'x')).toBe('image/png');
  });

  it('falls back to the extension for octet-stream, a missing or a broken type', () => {
    expect(resolveContentType('application/octet-stream', 'pic.png')).toBe('image/png');
    expect(resolveContentType(undefined, 'doc.pdf')).toBe('application/pdf');
    expect(resolveContentType('not a type', 'page.html')).toBe('text/html');
    expect(resolveContentType('text/html\r\nx: y', 'a.json')).toBe('application/json');
  });

  it('ends at application/octet-stream', () => {
    expect(resolveContentType('application/octet-stream', 'odd.zzqqx')).toBe('application/octet-stream');
    expect(resolveContentType('', 'noext')).toBe('application/octet-stream');
  });
});
