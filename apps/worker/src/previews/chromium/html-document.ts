import type MarkdownIt from 'markdown-it';

/**
 * The page Chromium prints, for the three families it handles. Markdown is rendered with raw HTML off
 * (`html: false`), so a Markdown file cannot smuggle tags in; text is escaped into a <pre>. User HTML is
 * printed as given; what it may load is limited by the response's CSP and the request filter, not here.
 */
export const PREVIEW_CSP = [
  "default-src 'none'",
  'img-src data:',
  "style-src 'unsafe-inline' data:",
  'font-src data:',
  'media-src data:',
  "frame-src 'none'",
  "form-action 'none'",
  "base-uri 'none'",
].join('; ');

/** Loaded with the first Markdown preview, not at start: an idle worker does not carry it. */
let markdown: Promise<MarkdownIt> | null = null;
const markdownRenderer = (): Promise<MarkdownIt> =>
  (markdown ??= import('markdown-it').then(
    (loaded) =>
      new (loaded.default as unknown as typeof MarkdownIt)({ html: false, linkify: false, typographer: false }),
  ));

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const PAGE_STYLE = `
  body { font-family: "DejaVu Sans", sans-serif; font-size: 11pt; line-height: 1.45; margin: 0; color: #111; }
  pre, code { font-family: "DejaVu Sans Mono", monospace; font-size: 9pt; }
  pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
  .markdown pre { background: #f4f4f4; padding: 6pt; }
  .markdown table { border-collapse: collapse; }
  .markdown th, .markdown td { border: 1px solid #999; padding: 2pt 6pt; }
  img { max-width: 100%; }
`;

function page(title: string, bodyClass: string, body: string): string {
  return `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title><style>${PAGE_STYLE}</style></head>
<body class="${bodyClass}">${body}</body></html>`;
}

export async function markdownToHtml(source: string, title: string): Promise<string> {
  return page(title, 'markdown', (await markdownRenderer()).render(source));
}

export function textToHtml(source: string, title: string): string {
  return page(title, 'text', `<pre>${escapeHtml(source)}</pre>`);
}

/** Drops a UTF-8 BOM and NULs (Chromium stops rendering text at neither, but NULs print as boxes). */
export function decodeText(bytes: Buffer): string {
  const text = bytes.toString('utf8');
  return text.replace(/^\uFEFF/, '').replace(/\u0000/g, '');
}

/** An HTML file without a declared charset is taken as UTF-8 rather than Chromium's windows-1252 default. */
export function htmlContentType(head: Buffer): string {
  return /charset\s*=/i.test(head.subarray(0, 1024).toString('latin1')) ? 'text/html' : 'text/html; charset=utf-8';
}
