import { describe, expect, it } from 'vitest';
import { allSnippets, parseSnippets, staticFinding, substitute, where } from '../support/doc-snippets';

describe('the fences of README.md and docs/', () => {
  it('each is run (test/e2e/doc-snippets.test.ts), data that parses, or marked not run with its reason', () => {
    const findings = allSnippets().flatMap((snippet) => {
      const finding = staticFinding(snippet);
      return finding ? [`${where(snippet)}: ${finding}`] : [];
    });
    expect(findings).toEqual([]);
  });
});

describe('parseSnippets', () => {
  const doc = [
    '# A page',
    '```sh',
    'echo one',
    '```',
    '<!-- snippet: not run (needs root and apt) -->',
    '',
    '```bash',
    'apt-get install -y jq',
    '```',
    '````md',
    '```sh',
    'inside a longer fence',
    '```',
    '````',
    '```',
    'a diagram',
    '```',
    '<!-- snippet: not run () -->',
    '```json',
    '{"a": }',
    '```',
  ].join('\n');
  const snippets = parseSnippets(doc, 'page.md');

  it('finds each fence once, with its line, language, body and marker', () => {
    expect(snippets.map((s) => [s.line, s.lang, s.kind, s.notRun])).toEqual([
      [2, 'sh', 'bash', undefined],
      [7, 'bash', 'skipped', 'needs root and apt'],
      [10, 'md', 'unknown', undefined],
      [15, '', 'unknown', undefined],
      [19, 'json', 'skipped', ''],
    ]);
    expect(snippets[0].code).toBe('echo one\n');
    expect(snippets[2].code).toBe('```sh\ninside a longer fence\n```\n');
  });

  it('names what is wrong: no language, a language it cannot run, a bad marker, JSON that does not parse', () => {
    expect(snippets.map(staticFinding)).toEqual([
      null,
      null,
      expect.stringContaining('`md` fence cannot be run'),
      expect.stringContaining('without a language'),
      expect.stringContaining('a marker that does not read'),
    ]);
    expect(staticFinding({ ...snippets[4], kind: 'json', notRun: undefined })).toContain('json that does not parse');
  });

  it('replaces the local address and a shown key, and nothing else', () => {
    const code = 'curl http://127.0.0.1:8080/v1 http://localhost:8080 -H "Bearer sk_dev_…" sk_live_real';
    expect(substitute(code, { url: 'http://127.0.0.1:28080', key: 'sk_test' })).toBe(
      'curl http://127.0.0.1:28080/v1 http://127.0.0.1:28080 -H "Bearer sk_test" sk_live_real',
    );
  });
});
