import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';

/**
 * The fenced code blocks of README.md and docs/*.md, so that a test can run every one of them and none rots.
 *
 * Each fence is one of:
 * - run: `bash`/`sh`/`shell` (bash -euo pipefail, must exit 0), `js`/`mjs`/`javascript`/`ts` (node, ESM, must
 *   exit 0), `html` (a page opened in Chromium on its own origin, which must report success);
 * - data: `json` and `yaml` (must parse), `text` (output, a diagram; nothing to check);
 * - marked not run, with its reason, by `<!-- snippet: not run (the reason) -->` on the last non-blank line
 *   before the fence (a snippet that needs root, apt, Docker or a cluster).
 * Any other fence, a bare one included, is a finding: the reader cannot tell whether it is meant to work.
 */
export const ROOT = resolve(__dirname, '../..');

export type SnippetKind = 'bash' | 'node' | 'ts' | 'html' | 'json' | 'yaml' | 'text' | 'skipped' | 'unknown';

export interface Snippet {
  /** Path relative to the repository root, and the 1-based line of the opening fence. */
  file: string;
  line: number;
  lang: string;
  code: string;
  kind: SnippetKind;
  /** Why it is not run, when it is marked so. */
  notRun?: string;
}

const KINDS: Record<string, SnippetKind> = {
  bash: 'bash',
  sh: 'bash',
  shell: 'bash',
  js: 'node',
  mjs: 'node',
  javascript: 'node',
  ts: 'ts',
  html: 'html',
  json: 'json',
  yaml: 'yaml',
  yml: 'yaml',
  text: 'text',
};

const MARKER = /^<!--\s*snippet:(.*)-->$/;
const NOT_RUN = /^\s*not run\s*\((.*\S.*)\)\s*$/;
const FENCE = /^( {0,3})(`{3,}|~{3,})\s*([\w-]*)[^`]*$/;

/** The documents the snippets come from: the repository's front pages and every page under docs/. */
export function documents(root = ROOT): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', 'CONTRIBUTING.md', 'SECURITY.md', ...docs];
}

/** Every fenced block of one Markdown text, with the kind it is run as. */
export function parseSnippets(markdown: string, file: string): Snippet[] {
  const lines = markdown.split('\n');
  const snippets: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, rawLang] = open;
    const body: string[] = [];
    let end = i + 1;
    // A closing fence is at least as long as the opening one, of the same character, with nothing after it.
    while (end < lines.length && !new RegExp(`^ {0,3}${fence[0]}{${fence.length},}\\s*$`).test(lines[end])) {
      body.push(lines[end].startsWith(indent) ? lines[end].slice(indent.length) : lines[end]);
      end++;
    }
    let before = i - 1;
    while (before >= 0 && lines[before].trim() === '') before--;
    const marker = before >= 0 ? MARKER.exec(lines[before].trim()) : null;
    const lang = rawLang.toLowerCase();
    const kind: SnippetKind = marker ? 'skipped' : (KINDS[lang] ?? 'unknown');
    // A marker that does not read `not run (reason)` skips nothing and is reported, not taken as a reason.
    const notRun = marker ? (NOT_RUN.exec(marker[1])?.[1].trim() ?? '') : undefined;
    snippets.push({ file, line: i + 1, lang, code: `${body.join('\n')}\n`, kind, notRun });
    i = end;
  }
  return snippets;
}

export function allSnippets(root = ROOT): Snippet[] {
  return documents(root).flatMap((file) => parseSnippets(readFileSync(join(root, file), 'utf8'), file));
}

/** What is wrong with a fence before anything runs: no kind, or data that does not parse. */
export function staticFinding(snippet: Snippet): string | null {
  if (snippet.kind === 'unknown')
    return snippet.lang
      ? `a \`${snippet.lang}\` fence cannot be run: mark it <!-- snippet: not run (why) --> or use text`
      : 'a fence without a language: say `text` for output or a diagram, or the language it is run as';
  if (snippet.kind === 'skipped' && !snippet.notRun)
    return 'a marker that does not read <!-- snippet: not run (the reason) -->';
  // Data is parsed even when it is marked not run (a manifest that needs a cluster to apply still parses).
  const data = snippet.kind === 'skipped' ? KINDS[snippet.lang] : snippet.kind;
  try {
    if (data === 'json') JSON.parse(snippet.code);
    if (data === 'yaml') parseYaml(snippet.code);
  } catch (error) {
    return `${data} that does not parse: ${(error as Error).message.split('\n')[0]}`;
  }
  return null;
}

/** Where a snippet is, as a reader finds it. */
export const where = (snippet: Snippet) => `${snippet.file}:${snippet.line}`;

/**
 * The placeholders a reader replaces, replaced for a test stack: the local gateway address and an API key
 * shown as `sk_…` (the one `npm start` prints).
 */
export function substitute(code: string, values: { url: string; key: string }): string {
  return code
    .replace(/https?:\/\/(?:127\.0\.0\.1|localhost):8080/g, values.url)
    .replace(/\bsk_[A-Za-z0-9_]*…/g, values.key);
}
