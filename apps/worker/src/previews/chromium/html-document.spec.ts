import { describe, expect, it } from 'vitest';
import { decodeText, escapeHtml, htmlContentType, markdownToHtml, PREVIEW_CSP, textToHtml } from './html-document';

describe('text and Markdown to HTML', () => {
  it('escapes every character that could open markup', () => {
    expect(escapeHtml(`<script>alert("x") & 'y'</script>`)).toBe(
      '&lt;script&gt;alert(&quot;x&quot;) &amp; &#39;y&#39;&lt;/script&gt;',
    );
  });

  it('text lands escaped in a <pre>, and the title is escaped too', () => {
    const html = textToHtml('a < b\n<img src=x onerror=alert(1)>', '<evil>.txt');
    expect(html).toContain('<pre>a &lt; b\n&lt;img src=x onerror=alert(1)&gt;</pre>');
    expect(html).toContain('<title>&lt;evil&gt;.txt</title>');
    expect(html).not.toContain('<img');
  });

  it('Markdown renders, but raw HTML in it stays text', async () => {
    const html = await markdownToHtml(
      '# Title\n\n<script>alert(1)</script>\n\n<iframe src="file:///etc/passwd"></iframe>\n\n**bold**',
      'notes.md',
    );
    expect(html).toContain('<h1>Title</h1>');
    expect(html).toContain('<strong>bold</strong>');
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<iframe');
    expect(html).toContain('&lt;script&gt;');
  });

  it('Markdown links with javascript: URLs are not made into links', async () => {
    expect(await markdownToHtml('[x](javascript:alert(1))', 'a.md')).not.toContain('href="javascript:');
  });

  it('drops a BOM and NULs from text', () => {
    expect(decodeText(Buffer.from('\uFEFFhi\u0000there', 'utf8'))).toBe('hithere');
  });

  it('HTML without a declared charset is served as UTF-8', () => {
    expect(htmlContentType(Buffer.from('<p>héllo</p>'))).toBe('text/html; charset=utf-8');
    expect(htmlContentType(Buffer.from('<meta charset="iso-8859-1"><p>x</p>'))).toBe('text/html');
  });

  it('the CSP allows nothing but data: resources and inline styles', () => {
    expect(PREVIEW_CSP).toMatch(/^default-src 'none';/);
    expect(PREVIEW_CSP).not.toMatch(/script-src|https?:|\*/);
  });
});
