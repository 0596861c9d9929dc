import contentDisposition from 'content-disposition';

/**
 * `attachment; filename="<ASCII fallback>"; filename*=UTF-8''<percent-encoded>` (RFC 6266 / 8187).
 * In the fallback every character outside printable ASCII, and every `"` and `\`, becomes `_`, so no
 * quote, backslash, CR, LF or other control can reach the header (docs/api.md §5).
 */
export function asciiFallback(filename: string): string {
  return Array.from(filename, (char) =>
    /^[\x20-\x7e]$/.test(char) && char !== '"' && char !== '\\' ? char : '_',
  ).join('');
}

export function dispositionHeader(type: 'attachment' | 'inline', filename: string): string {
  return contentDisposition(filename, { type, fallback: asciiFallback(filename) });
}
