import { describe, expect, it } from 'vitest';
import { DEFLATE_LEVEL, isCompressible, zipEntryOptions } from './zip-entry-options';

describe('isCompressible', () => {
  it.each([
    ['text/plain', 'a.txt'],
    ['text/markdown; charset=utf-8', 'report.md'],
    ['text/csv', 'data.csv'],
    ['application/json', 'a.json'],
    ['application/ld+json', 'a.jsonld'],
    ['image/svg+xml', 'logo.svg'],
    ['application/octet-stream', 'notes.txt'],
    ['application/octet-stream', 'main.py'],
  ])('deflates %s (%s)', (type, name) => expect(isCompressible(type, name)).toBe(true));

  it.each([
    ['application/zip', 'a.zip'],
    ['application/gzip', 'a.gz'],
    ['image/png', 'a.png'],
    ['image/jpeg', 'a.jpg'],
    ['image/gif', 'a.gif'],
    ['image/webp', 'a.webp'],
    ['application/pdf', 'a.pdf'],
    ['application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'a.docx'],
    ['application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 'a.xlsx'],
    ['application/vnd.openxmlformats-officedocument.presentationml.presentation', 'a.pptx'],
    ['video/mp4', 'a.mp4'],
    ['application/octet-stream', 'a.bin'],
    ['application/octet-stream', 'photo.jpeg'],
    ['application/octet-stream', 'archive.tar.gz'],
  ])('stores %s (%s)', (type, name) => expect(isCompressible(type, name)).toBe(false));
});

describe('zipEntryOptions', () => {
  it('deflates text, stores the rest, with the artifact time, a plain file mode and the size', () => {
    const createdAt = new Date('2026-12-02T10:00:00Z');
    expect(zipEntryOptions({ filename: 'r.md', contentType: 'text/markdown', bytes: 12n, createdAt })).toEqual({
      compressionLevel: DEFLATE_LEVEL,
      mtime: createdAt,
      mode: 0o100644,
      size: 12,
    });
    expect(
      zipEntryOptions({ filename: 'p.png', contentType: 'image/png', bytes: 5_000_000_000n, createdAt }),
    ).toMatchObject({ compressionLevel: 0, size: 5_000_000_000 });
  });
});
