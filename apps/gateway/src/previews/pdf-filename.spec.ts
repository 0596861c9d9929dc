import { describe, expect, it } from 'vitest';
import { pdfFilename } from './previews.service';

describe('pdfFilename', () => {
  it('swaps the last extension for .pdf and keeps names without one', () => {
    expect(pdfFilename('report.docx')).toBe('report.pdf');
    expect(pdfFilename('archive.tar.gz')).toBe('archive.tar.pdf');
    expect(pdfFilename('README')).toBe('README.pdf');
    expect(pdfFilename('.env')).toBe('.env.pdf');
    expect(pdfFilename('given.pdf')).toBe('given.pdf');
  });
});
