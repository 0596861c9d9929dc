import { describe, expect, it } from 'vitest';
import { asciiFallback, dispositionHeader } from './content-disposition';

describe('dispositionHeader', () => {
  it('quotes a plain ASCII name', () => {
    expect(dispositionHeader('attachment', 'Quarterly report.txt')).toBe('attachment; filename="Quarterly report.txt"');
  });

  it('adds filename* for a non-ASCII name with an underscore fallback', () => {
    const header = dispositionHeader('attachment', 'résumé-日本語.txt');
    expect(header).toBe(
      `attachment; filename="r_sum_-___.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9-%E6%97%A5%E6%9C%AC%E8%AA%9E.txt`,
    );
  });

  it('never lets a quote, backslash or control reach the quoted fallback', () => {
    const header = dispositionHeader('attachment', 'a"b\\c\u00a0d.txt');
    expect(header).toMatch(/^attachment; filename="a_b_c_d\.txt"; filename\*=UTF-8''/);
    expect(header).not.toMatch(/[\r\n]/);
    expect(asciiFallback('😀.txt')).toBe('_.txt');
  });

  it('keeps percent sequences of the name literal', () => {
    expect(dispositionHeader('inline', 'a%20b.pdf')).toBe(`inline; filename="a%20b.pdf"; filename*=UTF-8''a%2520b.pdf`);
  });
});
