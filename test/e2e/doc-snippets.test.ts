import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allSnippets, ROOT, type Snippet, substitute, where } from '../support/doc-snippets';
import { E2E_BASE_URL, KEYS } from '../support/env';

/**
 * Every snippet of README.md, CONTRIBUTING.md, SECURITY.md and docs/*.md (test/support/doc-snippets.ts says which
 * fences run and how), run against the shared e2e stack with the reader's placeholders replaced: `$UHP_URL` and
 * `$UHP_KEY` in the environment, `http://127.0.0.1:8080` and `sk_…` in the text. Each runs in a fresh folder.
 * test/lint/doc-snippets.spec.ts checks, without a stack, that every fence is one of these or marked not run.
 */
const VALUES = { url: E2E_BASE_URL, key: KEYS.alice };
const CHROMIUM = process.env.UHP_TEST_CHROMIUM ?? '/usr/bin/chromium';
const TUS_BROWSER_BUILD = join(ROOT, 'node_modules/tus-js-client/dist/tus.min.js');
/** What a snippet may take, a preview conversion or a few uploads included; far above what any needs. */
const SNIPPET_TIMEOUT_MS = 100_000;
/** The file the test picks in a page's file input: large enough for tus-js-client to send it in two chunks. */
const PAGE_FILE_BYTES = 6 * 1024 * 1024;

const snippets = allSnippets();
const ofKind = (...kinds: Snippet['kind'][]) => snippets.filter((snippet) => kinds.includes(snippet.kind));

/** A fresh folder for one snippet; node finds the repository's packages through a node_modules link. */
function workDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'uhp-snippet-'));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return dir;
}

/** Runs a command to its end; resolves with its exit code and the last of its output. */
function run(command: string, args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, {
      cwd,
      env: { ...process.env, UHP_URL: VALUES.url, UHP_KEY: VALUES.key },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const keep = (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-8_000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => child.kill('SIGKILL'), SNIPPET_TIMEOUT_MS);
    child.on('error', fail);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, output });
    });
  });
}

async function runScript(snippet: Snippet, fileName: string, command: string[]): Promise<void> {
  const dir = workDir();
  try {
    const code = substitute(snippet.code, VALUES);
    writeFileSync(
      join(dir, fileName),
      snippet.kind === 'ts'
        ? ts.transpileModule(code, {
            compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
          }).outputText
        : code,
    );
    const result = await run(command[0], [...command.slice(1), fileName], dir);
    expect(result.code, `${where(snippet)} exited with ${result.code}:\n${result.output}`).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the snippets of README.md and docs/', () => {
  it.each(ofKind('bash').map((s) => [where(s), s] as const))('%s (bash)', async (_, snippet) => {
    await runScript(snippet, 'snippet.sh', ['bash', '-euo', 'pipefail']);
  });

  it.each(ofKind('node', 'ts').map((s) => [where(s), s] as const))('%s (node)', async (_, snippet) => {
    await runScript(snippet, 'snippet.mjs', [process.execPath]);
  });

  describe('pages, each on an origin of its own, in Chromium', () => {
    let browser: Browser;
    let server: Server;
    let origin: string;
    let page = '';

    beforeAll(async () => {
      server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(page));
      await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
      origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      // As root Chromium runs only without its own sandbox; the pages are this repository's own.
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, chromiumSandbox: false });
    });
    afterAll(async () => {
      await browser?.close();
      server?.close();
    });

    // A page reports on an element #status: "Done…" when it succeeded, "Error…" when it did not. Every file
    // input gets a file, as a reader would pick one.
    it.each(ofKind('html').map((s) => [where(s), s] as const))('%s (html)', async (_, snippet) => {
      page = substitute(snippet.code, VALUES);
      const tab = await browser.newPage();
      try {
        // No network: tus-js-client's browser build comes from this checkout, whichever CDN the page names.
        await tab.route('**/*', (route) => {
          const url = new URL(route.request().url());
          if (/\/tus-js-client(@[^/]*)?\/dist\/tus(\.min)?\.js$/.test(url.pathname))
            return route.fulfill({ contentType: 'text/javascript', body: readFileSync(TUS_BROWSER_BUILD) });
          if (url.hostname === '127.0.0.1') return route.continue();
          return route.abort();
        });
        await tab.goto(`${origin}/`);
        for (const input of await tab.locator('input[type=file]').all())
          await input.setInputFiles({
            name: 'from-the-readme.bin',
            mimeType: 'application/octet-stream',
            buffer: randomBytes(PAGE_FILE_BYTES),
          });
        const status = tab.locator('#status');
        await expect
          .poll(async () => (await status.textContent()) ?? '', { timeout: SNIPPET_TIMEOUT_MS, interval: 250 })
          .toMatch(/^(Done|Error)/);
        expect(await status.textContent(), where(snippet)).toMatch(/^Done/);
      } finally {
        await tab.close();
      }
    });
  });
});
