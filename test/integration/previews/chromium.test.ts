import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConversionError } from '../../../apps/worker/src/previews/conversion.error';
import { createPreviewConverters, type PreviewConverters } from '../../../apps/worker/src/previews/converter.registry';
import { pdfText, qpdfCheck } from '../../support/preview-fixtures';

const MARKER = `Marker${randomUUID().slice(0, 8)}`;
let dir: string;
let isolated: PreviewConverters;
let open: PreviewConverters;
let server: Server;
let serverUrl: string;
let serverHits: string[] = [];

async function convert(
  converters: PreviewConverters,
  filename: string,
  content: string,
  contentType = 'application/octet-stream',
): Promise<string> {
  const source = join(dir, `${randomUUID()}-${filename}`);
  await writeFile(source, content);
  const out = join(dir, `${randomUUID()}.pdf`);
  await converters.chromium.convert(
    { path: source, filename, contentType },
    { path: out },
    new AbortController().signal,
  );
  expect((await readFile(out)).subarray(0, 5).toString()).toBe('%PDF-');
  expect(await qpdfCheck(out)).toBe(0);
  return pdfText(out);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'uhp-chromium-test-'));
  await chmod(dir, 0o711); // converters of other uids pass through to their own dirs beneath it
  server = createServer((req, res) => {
    serverHits.push(req.url ?? '');
    res.setHeader('content-type', 'text/css');
    res.end('body { color: red }');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  serverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  isolated = await createPreviewConverters({ workDir: join(dir, 'isolated') });
  // Same converter without the network namespace: proves the request filter and CSP alone stop requests.
  open = await createPreviewConverters({ workDir: join(dir, 'open'), sandbox: { network: 'off' } });
});

afterAll(async () => {
  await isolated?.registry.close();
  await open?.registry.close();
  server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('HTML, Markdown and text through Chromium', () => {
  it('HTML converts with its text', async () => {
    expect(
      await convert(
        isolated,
        'page.html',
        `<!DOCTYPE html><html><body><h1>Title</h1><p>${MARKER} in HTML</p></body></html>`,
      ),
    ).toContain(`${MARKER} in HTML`);
  });

  it('Markdown renders, and raw HTML in it stays text', async () => {
    const text = await convert(
      isolated,
      'notes.md',
      `# Heading ${MARKER}\n\n- item one\n- item two\n\n<b>not bold</b>\n`,
      'text/markdown',
    );
    expect(text).toContain(`Heading ${MARKER}`);
    expect(text).toContain('item two');
    expect(text).toContain('<b>not bold</b>');
  });

  it('plain text and source code are escaped into the page', async () => {
    expect(await convert(isolated, 'readme.txt', `${MARKER} plain <script>alert(1)</script> & more\n`)).toContain(
      `${MARKER} plain <script>alert(1)</script> & more`,
    );
    expect(await convert(isolated, 'main.ts', `export const answer = "${MARKER}"; // <tag>\n`)).toContain(
      `export const answer = "${MARKER}"; // <tag>`,
    );
    expect(
      await convert(isolated, 'noextension', `${MARKER} by content type\n`, 'text/plain; charset=utf-8'),
    ).toContain(`${MARKER} by content type`);
  });

  it('JavaScript does not run', async () => {
    const text = await convert(
      isolated,
      'script.html',
      `<p id="p">${MARKER} static</p><script>document.getElementById('p').textContent = 'SCRIPT RAN';</script><img src="x" onerror="document.body.textContent='ONERROR RAN'">`,
    );
    expect(text).toContain(`${MARKER} static`);
    expect(text).not.toContain('RAN');
  });

  it('file:// references do not bring local files into the PDF', async () => {
    const passwdLine = (await readFile('/etc/passwd', 'utf8')).split('\n')[0]!;
    const html = `<html><head><meta http-equiv="refresh" content="0; url=file:///etc/passwd"><link rel="stylesheet" href="file:///etc/passwd"></head><body><p>${MARKER} files</p>
      <iframe src="file:///etc/passwd"></iframe><iframe src="file:///proc/self/environ"></iframe><object data="file:///etc/passwd" type="text/plain"></object><embed src="file:///proc/self/environ" type="text/plain"><img src="file:///etc/passwd"></body></html>`;
    for (const converters of [isolated, open]) {
      const text = await convert(converters, 'files.html', html);
      expect(text).toContain(`${MARKER} files`);
      expect(text).not.toContain(passwdLine);
      expect(text).not.toMatch(/PATH=|HOME=/);
    }
  });

  it('external resources cause no request to a local HTTP server, with or without the network namespace', async () => {
    serverHits = [];
    const html = `<html><head><link rel="stylesheet" href="${serverUrl}/style.css"><style>@import url("${serverUrl}/import.css"); body { background: url("${serverUrl}/bg.png") }</style></head>
      <body><p>${MARKER} remote</p><img src="${serverUrl}/img.png"><iframe src="${serverUrl}/frame.html"></iframe><video src="${serverUrl}/v.mp4"></video><object data="${serverUrl}/o.txt"></object></body></html>`;
    const markdown = `# ${MARKER}\n\n![remote](${serverUrl}/md.png)\n`;
    for (const converters of [isolated, open]) {
      expect(await convert(converters, 'remote.html', html)).toContain(`${MARKER} remote`);
      expect(await convert(converters, 'remote.md', markdown)).toContain(MARKER);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(serverHits).toEqual([]);
  });

  it('a rendering over the time limit is a transient timeout that kills the browser group; the next conversion relaunches it', async () => {
    const slow = await createPreviewConverters({ workDir: join(dir, 'slow'), timeoutMs: 30_000 });
    try {
      expect(await slow.chromium.available()).toEqual({ ok: true });
      // Checking it launched a Chromium that exited: the browser (and Playwright) start at the first conversion.
      expect(await slow.chromium.browserPid()).toBeUndefined();
      const small = join(dir, 'small.txt');
      await writeFile(small, `${MARKER}\n`);
      await slow.chromium.convert(
        { path: small, filename: 'small.txt', contentType: 'text/plain' },
        { path: join(dir, 'small.pdf') },
        new AbortController().signal,
      );
      const firstPid = (await slow.chromium.browserPid())!;
      expect(firstPid).toBeGreaterThan(0);
      slow.options.timeoutMs = 1;
      const source = join(dir, 'big.txt');
      await writeFile(source, `${MARKER}\n`.repeat(20_000));
      const error = await slow.chromium
        .convert(
          { path: source, filename: 'big.txt', contentType: 'text/plain' },
          { path: join(dir, 'slow.pdf') },
          new AbortController().signal,
        )
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(ConversionError);
      expect((error as ConversionError).failure).toBe('timeout');
      expect((error as ConversionError).isPermanent).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 300));
      // Nothing of the browser's process group is left running (zombies only: this container's init reaps late).
      let listing = '';
      try {
        listing = execFileSync('ps', ['-o', 'stat=', '-g', String(firstPid)], { encoding: 'utf8' });
      } catch {
        // ps exits 1 when the group is empty
      }
      const group = listing.split('\n').filter((line) => line.trim());
      expect(group.filter((stat) => !stat.trim().startsWith('Z'))).toEqual([]);
      slow.options.timeoutMs = 30_000;
      const out = join(dir, 'after-timeout.pdf');
      await slow.chromium.convert(
        { path: source, filename: 'big.txt', contentType: 'text/plain' },
        { path: out },
        new AbortController().signal,
      );
      expect(await pdfText(out)).toContain(MARKER);
      expect(await slow.chromium.browserPid()).not.toBe(firstPid);
    } finally {
      await slow.registry.close();
    }
  });

  it('input over the size limit is a permanent too_large', async () => {
    const small = await createPreviewConverters({ workDir: join(dir, 'small'), chromium: { maxInputBytes: 10 } });
    const source = join(dir, 'eleven.txt');
    await writeFile(source, '01234567890');
    const error = await small.chromium
      .convert(
        { path: source, filename: 'eleven.txt', contentType: 'text/plain' },
        { path: join(dir, 'x.pdf') },
        new AbortController().signal,
      )
      .then(
        () => null,
        (e: unknown) => e as ConversionError,
      );
    expect(error?.failure).toBe('too_large');
    expect(error?.isPermanent).toBe(true);
    await small.registry.close();
  });
});
