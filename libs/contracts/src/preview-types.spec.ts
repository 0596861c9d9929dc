import { describe, expect, it } from 'vitest';
import { extensionOf, previewTypeOf } from './preview-types';

describe('previewTypeOf', () => {
  it.each([
    ['report.DOCX', 'application/octet-stream', 'office', 'docx'],
    ['sheet.xls', '', 'office', 'xls'],
    ['data.csv', 'text/plain', 'office', 'csv'],
    ['deck.odp', 'application/octet-stream', 'office', 'odp'],
    ['photo.JPG', 'application/octet-stream', 'image', 'jpeg'],
    ['anim.gif', 'image/gif', 'image', 'gif'],
    ['paper.pdf', 'application/octet-stream', 'pdf', 'pdf'],
    ['index.htm', 'text/plain', 'html', 'html'],
    ['README.md', 'application/octet-stream', 'markdown', 'md'],
    ['main.py', 'application/octet-stream', 'text', 'py'],
    ['Dockerfile', 'application/octet-stream', 'text', 'dockerfile'],
  ])('%s (%s) → %s/%s by extension', (filename, contentType, kind, extension) => {
    expect(previewTypeOf({ filename, contentType })).toEqual({ kind, extension });
  });

  it('a known extension wins over a contradicting content type', () => {
    expect(previewTypeOf({ filename: 'x.docx', contentType: 'application/pdf' })).toEqual({
      kind: 'office',
      extension: 'docx',
    });
  });

  it('the content type decides when the name has no known extension', () => {
    expect(
      previewTypeOf({
        filename: 'upload',
        contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      }),
    ).toEqual({ kind: 'office', extension: 'docx' });
    expect(previewTypeOf({ filename: 'upload.bin', contentType: 'image/webp' })).toEqual({
      kind: 'image',
      extension: 'webp',
    });
    expect(previewTypeOf({ filename: 'blob', contentType: 'Text/Markdown; charset=utf-8' })).toEqual({
      kind: 'markdown',
      extension: 'md',
    });
    expect(previewTypeOf({ filename: 'blob', contentType: 'text/x-whatever' })).toEqual({
      kind: 'text',
      extension: 'txt',
    });
    expect(previewTypeOf({ filename: 'blob', contentType: 'application/ld+json' })).toEqual({
      kind: 'text',
      extension: 'json',
    });
  });

  it('anything else has no preview', () => {
    expect(previewTypeOf({ filename: 'a.zip', contentType: 'application/zip' })).toBeNull();
    expect(previewTypeOf({ filename: 'a.exe', contentType: 'application/octet-stream' })).toBeNull();
    expect(previewTypeOf({ filename: 'movie.mp4', contentType: 'video/mp4' })).toBeNull();
    expect(previewTypeOf({ filename: 'a.tiff', contentType: 'image/tiff' })).toBeNull();
  });

  it('extensionOf takes the last extension of the base name only', () => {
    expect(extensionOf('dir.docx/archive.tar.gz')).toBe('gz');
    expect(extensionOf('C:\\docs\\Report.PDF')).toBe('pdf');
    expect(extensionOf('.env')).toBe('');
    expect(extensionOf('noext')).toBe('');
  });
});
