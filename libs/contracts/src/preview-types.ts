import { extname } from 'node:path';

/** The converter families of docs/api.md §6. */
export type PreviewKind = 'office' | 'html' | 'markdown' | 'text' | 'image' | 'pdf';

export interface PreviewType {
  kind: PreviewKind;
  /** The canonical extension the converter works with (it picks an import filter or decoder by it). */
  extension: string;
}

const OFFICE_EXTENSIONS = ['doc', 'docx', 'odt', 'rtf', 'xls', 'xlsx', 'ods', 'csv', 'ppt', 'pptx', 'odp'] as const;
export type OfficeExtension = (typeof OFFICE_EXTENSIONS)[number];

const IMAGE_EXTENSIONS = ['png', 'jpeg', 'gif', 'webp'] as const;
export type ImageExtension = (typeof IMAGE_EXTENSIONS)[number];

/** Source code and plain-text formats rendered as an escaped <pre> page. */
const TEXT_EXTENSIONS = [
  'txt',
  'text',
  'log',
  'ini',
  'cfg',
  'conf',
  'toml',
  'yaml',
  'yml',
  'json',
  'jsonl',
  'ndjson',
  'xml',
  'svg',
  'tsv',
  'js',
  'mjs',
  'cjs',
  'jsx',
  'ts',
  'mts',
  'cts',
  'tsx',
  'py',
  'rb',
  'go',
  'rs',
  'java',
  'kt',
  'kts',
  'scala',
  'c',
  'h',
  'cc',
  'cpp',
  'cxx',
  'hpp',
  'hh',
  'cs',
  'fs',
  'swift',
  'm',
  'php',
  'pl',
  'pm',
  'r',
  'lua',
  'sh',
  'bash',
  'zsh',
  'fish',
  'ps1',
  'bat',
  'sql',
  'css',
  'scss',
  'less',
  'vue',
  'svelte',
  'dart',
  'ex',
  'exs',
  'erl',
  'hs',
  'ml',
  'clj',
  'el',
  'vim',
  'diff',
  'patch',
  'tex',
  'rst',
  'adoc',
  'proto',
  'graphql',
  'gradle',
  'cmake',
  'mk',
  'dockerfile',
  'env',
] as const;

const BY_EXTENSION: ReadonlyMap<string, PreviewType> = new Map<string, PreviewType>([
  ...OFFICE_EXTENSIONS.map((extension): [string, PreviewType] => [extension, { kind: 'office', extension }]),
  ...IMAGE_EXTENSIONS.map((extension): [string, PreviewType] => [extension, { kind: 'image', extension }]),
  ['jpg', { kind: 'image', extension: 'jpeg' }],
  ['jpe', { kind: 'image', extension: 'jpeg' }],
  ['pdf', { kind: 'pdf', extension: 'pdf' }],
  ['html', { kind: 'html', extension: 'html' }],
  ['htm', { kind: 'html', extension: 'html' }],
  ['xhtml', { kind: 'html', extension: 'html' }],
  ['md', { kind: 'markdown', extension: 'md' }],
  ['markdown', { kind: 'markdown', extension: 'md' }],
  ...TEXT_EXTENSIONS.map((extension): [string, PreviewType] => [extension, { kind: 'text', extension }]),
]);

const BY_CONTENT_TYPE: ReadonlyMap<string, PreviewType> = new Map<string, PreviewType>([
  ['application/msword', { kind: 'office', extension: 'doc' }],
  ['application/vnd.openxmlformats-officedocument.wordprocessingml.document', { kind: 'office', extension: 'docx' }],
  ['application/vnd.oasis.opendocument.text', { kind: 'office', extension: 'odt' }],
  ['application/rtf', { kind: 'office', extension: 'rtf' }],
  ['text/rtf', { kind: 'office', extension: 'rtf' }],
  ['application/vnd.ms-excel', { kind: 'office', extension: 'xls' }],
  ['application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', { kind: 'office', extension: 'xlsx' }],
  ['application/vnd.oasis.opendocument.spreadsheet', { kind: 'office', extension: 'ods' }],
  ['text/csv', { kind: 'office', extension: 'csv' }],
  ['application/vnd.ms-powerpoint', { kind: 'office', extension: 'ppt' }],
  ['application/vnd.openxmlformats-officedocument.presentationml.presentation', { kind: 'office', extension: 'pptx' }],
  ['application/vnd.oasis.opendocument.presentation', { kind: 'office', extension: 'odp' }],
  ['image/png', { kind: 'image', extension: 'png' }],
  ['image/jpeg', { kind: 'image', extension: 'jpeg' }],
  ['image/gif', { kind: 'image', extension: 'gif' }],
  ['image/webp', { kind: 'image', extension: 'webp' }],
  ['application/pdf', { kind: 'pdf', extension: 'pdf' }],
  ['text/html', { kind: 'html', extension: 'html' }],
  ['application/xhtml+xml', { kind: 'html', extension: 'html' }],
  ['text/markdown', { kind: 'markdown', extension: 'md' }],
  ['text/x-markdown', { kind: 'markdown', extension: 'md' }],
  ['application/json', { kind: 'text', extension: 'json' }],
  ['application/xml', { kind: 'text', extension: 'xml' }],
  ['application/x-yaml', { kind: 'text', extension: 'yaml' }],
  ['application/yaml', { kind: 'text', extension: 'yaml' }],
  ['application/javascript', { kind: 'text', extension: 'js' }],
  ['application/x-sh', { kind: 'text', extension: 'sh' }],
  ['application/sql', { kind: 'text', extension: 'sql' }],
]);

/** The lower-case extension without its dot ('' when none). `Dockerfile` and `Makefile` count as text. */
export function extensionOf(filename: string): string {
  const base = filename.split(/[\\/]/).pop() ?? '';
  const lower = base.toLowerCase();
  if (lower === 'dockerfile' || lower === 'makefile') return lower === 'dockerfile' ? 'dockerfile' : 'mk';
  return extname(lower).slice(1);
}

/** `text/html; charset=utf-8` → `text/html`. */
export function essenceOf(contentType: string): string {
  return contentType.split(';')[0]!.trim().toLowerCase();
}

/**
 * Which converter family handles a file. A known extension wins over the content type because clients
 * often send `application/octet-stream` and because LibreOffice's import filter is chosen by extension;
 * the content type decides only for names without a known extension. Anything else `text/*` is text.
 */
export function previewTypeOf(input: { contentType: string; filename: string }): PreviewType | null {
  const byExtension = BY_EXTENSION.get(extensionOf(input.filename));
  if (byExtension) return byExtension;
  const essence = essenceOf(input.contentType);
  const byContentType = BY_CONTENT_TYPE.get(essence);
  if (byContentType) return byContentType;
  if (essence.startsWith('text/')) return { kind: 'text', extension: 'txt' };
  if (/\+(json|xml)$/.test(essence)) return { kind: 'text', extension: essence.endsWith('json') ? 'json' : 'xml' };
  return null;
}

/** Every extension previews support, by family (for /v1/limits and docs). */
export function supportedExtensions(): Record<PreviewKind, string[]> {
  const result: Record<PreviewKind, string[]> = { office: [], html: [], markdown: [], text: [], image: [], pdf: [] };
  for (const [extension, type] of BY_EXTENSION) result[type.kind].push(extension);
  return result;
}

/**
 * Bumped when any converter's output for the same input may change: cached previews of the old
 * version are no longer served (and are pruned with their content).
 */
export const PREVIEW_PIPELINE_VERSION = 1;

/** The worker's converter (its `name`) for each family; their availability decides what previews. */
export const CONVERTER_OF_KIND: Record<PreviewKind, string> = {
  office: 'libreoffice',
  html: 'chromium',
  markdown: 'chromium',
  text: 'chromium',
  image: 'image',
  pdf: 'pdf',
};

/** The cache key's format part: the family and the extension the converter works with. */
export const previewFormatKey = (type: PreviewType) => `${type.kind}:${type.extension}`;
