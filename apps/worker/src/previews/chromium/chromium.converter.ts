import { chmod, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ConversionError, toConversionError } from '../conversion.error';
import { previewTypeOf } from '@app/contracts';
import type { Availability, ConversionInput, ConversionOutput, PdfConverter } from '../pdf-converter';
import type { PdfValidator } from '../pdf/pdf.validator';
import type { PreviewConverterOptions } from '../preview.options';
import { cleanEnvironment, sandboxArgv } from '../sandbox/sandbox';
import { decodeText, htmlContentType, markdownToHtml, PREVIEW_CSP, textToHtml } from './html-document';

/** The page is served from this made-up origin by the request filter itself; nothing resolves it. */
export const PREVIEW_ORIGIN = 'http://preview.invalid';
const PAGE_URL = `${PREVIEW_ORIGIN}/document`;

/** From the machine notes; Playwright adds --headless and its own fresh --user-data-dir per launch. */
const CHROMIUM_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-extensions',
  '--disable-dev-shm-usage',
];

const shellQuote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

interface Session {
  browser: Browser;
  pidFile: string;
  conversions: number;
}

interface RenderedDocument {
  contentType: string;
  body: Buffer;
}

/**
 * A fresh context with its page, made ahead of the next conversion: opening a page starts a renderer
 * process, which costs 0.5–2 s on this machine, so it is done while the worker waits for work. Each
 * context still serves exactly one document and is closed after it.
 */
interface Tab {
  session: Session;
  context: BrowserContext;
  page: Page;
  document: RenderedDocument | null;
}

/**
 * HTML, Markdown and text/source code through one warm headless Chromium (Debian's), a fresh context per
 * conversion (opened ahead of it, see Tab) with JavaScript off. The document is answered by the request filter for
 * PAGE_URL with a
 * CSP header that allows only data: resources; every other request (http, https, ws) is aborted, and
 * Chromium itself runs in a network namespace with nothing to reach. file: URLs cannot be loaded from an
 * http origin at all.
 */
export class ChromiumConverter implements PdfConverter {
  readonly name = 'chromium';
  readonly version = '1';
  private session: Promise<Session> | undefined;
  private spare: Promise<Tab | null> | null = null;
  /** Every request the filter saw and aborted, newest last (tests and debug logs). */
  readonly blockedRequests: string[] = [];

  constructor(
    private readonly options: PreviewConverterOptions,
    private readonly validator: PdfValidator,
  ) {}

  accepts(input: { contentType: string; filename: string }): boolean {
    const kind = previewTypeOf(input)?.kind;
    return kind === 'html' || kind === 'markdown' || kind === 'text';
  }

  async available(): Promise<Availability> {
    try {
      await stat(this.options.chromium.executablePath);
      await this.browser();
      return { ok: true };
    } catch (error) {
      return { ok: false, reason: error instanceof Error ? error.message : String(error) };
    }
  }

  /** The browser process group's id (its launcher's pid); for tests. */
  async browserPid(): Promise<number | undefined> {
    if (!this.session) return undefined;
    const session = await this.session;
    return Number((await readFile(session.pidFile, 'utf8')).trim());
  }

  async convert(input: ConversionInput, output: ConversionOutput, signal: AbortSignal): Promise<void> {
    const type = previewTypeOf(input);
    if (type?.kind !== 'html' && type?.kind !== 'markdown' && type?.kind !== 'text') {
      throw new ConversionError(
        'unsupported_type',
        `not HTML, Markdown or text: ${input.filename} (${input.contentType})`,
      );
    }
    const size = (await stat(input.path)).size;
    if (size > this.options.chromium.maxInputBytes)
      throw new ConversionError(
        'too_large',
        `${size} bytes is over the ${this.options.chromium.maxInputBytes}-byte limit for rendered documents`,
      );
    const bytes = await readFile(input.path);
    const title = basename(input.filename);
    const body =
      type.kind === 'html'
        ? bytes
        : Buffer.from(
            type.kind === 'markdown' ? markdownToHtml(decodeText(bytes), title) : textToHtml(decodeText(bytes), title),
            'utf8',
          );
    const contentType = type.kind === 'html' ? htmlContentType(bytes) : 'text/html; charset=utf-8';

    const session = await this.browser();
    session.conversions++;
    const tab = await this.takeTab(session);
    tab.document = { contentType, body };
    let failure: ConversionError | undefined;
    const timer = setTimeout(() => {
      failure = new ConversionError('timeout', `rendering ran past ${this.options.timeoutMs} ms; Chromium was killed`);
      void this.kill(session);
    }, this.options.timeoutMs);
    const onAbort = () => {
      failure = new ConversionError('aborted', 'conversion aborted');
      void this.kill(session);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      await tab.page.goto(PAGE_URL, { waitUntil: 'load', timeout: this.options.timeoutMs });
      await tab.page.pdf({
        path: output.path,
        format: 'A4',
        printBackground: true,
        preferCSSPageSize: type.kind === 'html',
        margin: { top: '12mm', bottom: '12mm', left: '12mm', right: '12mm' },
      });
    } catch (error) {
      throw failure ?? toConversionError(error, signal);
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      await tab.context.close().catch(() => undefined);
    }
    if (failure) throw failure;
    await this.validator.check(output.path, 'invalid_output', signal);
    if (session.conversions >= this.options.chromium.maxConversionsPerBrowser) void this.kill(session);
    else this.prepareSpare(session);
  }

  /** The spare tab of this browser if one is ready, else a new one; either way the next spare is started. */
  private async takeTab(session: Session): Promise<Tab> {
    const spare = this.spare;
    this.spare = null;
    const ready = spare ? await spare : null;
    if (ready && ready.session === session && this.active === session) return ready;
    if (ready) await ready.context.close().catch(() => undefined);
    return this.openTab(session);
  }

  private prepareSpare(session: Session): void {
    if (this.spare || this.active !== session) return;
    this.spare = this.openTab(session).catch(() => null);
  }

  /** A context with JavaScript off whose only answered request is the document set on the tab. */
  private async openTab(session: Session): Promise<Tab> {
    const context = await session.browser.newContext({
      javaScriptEnabled: false,
      serviceWorkers: 'block',
      acceptDownloads: false,
      bypassCSP: false,
      offline: false,
    });
    const tab: Tab = { session, context, page: undefined as unknown as Page, document: null };
    await context.route('**/*', async (route) => {
      const request = route.request();
      if (tab.document && request.url() === PAGE_URL && request.isNavigationRequest()) {
        return route.fulfill({
          status: 200,
          headers: {
            'content-type': tab.document.contentType,
            'content-security-policy': PREVIEW_CSP,
            'x-content-type-options': 'nosniff',
          },
          body: tab.document.body,
        });
      }
      this.blockedRequests.push(request.url());
      if (this.blockedRequests.length > 200) this.blockedRequests.splice(0, 100);
      return route.abort('blockedbyclient');
    });
    tab.page = await context.newPage();
    return tab;
  }

  async close(): Promise<void> {
    const session = this.session;
    if (!session) return;
    const ready = await session.catch(() => undefined);
    if (!ready) return;
    this.forget(ready);
    await Promise.race([
      ready.browser.close().catch(() => undefined),
      new Promise((resolve) => setTimeout(resolve, 5_000)),
    ]);
    await this.killGroup(ready);
  }

  private browser(): Promise<Session> {
    this.session ??= this.launch().catch((error: unknown) => {
      this.session = undefined;
      throw new ConversionError(
        'unavailable',
        `cannot start Chromium: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    });
    return this.session;
  }

  private async launch(): Promise<Session> {
    const dir = join(
      this.options.workDir,
      'chromium',
      `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`,
    );
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const pidFile = join(dir, 'browser.pid');
    // Playwright needs one executable; this wrapper confines Chromium and records the group id
    // (exec keeps the pid, and Playwright starts the browser as a process group leader).
    const launcher = join(dir, 'launch.sh');
    const argv = sandboxArgv(this.options.chromium.executablePath, [], {
      isolateNetwork: this.options.isolateNetwork,
      maxFileBytes: this.options.maxOutputBytes,
    });
    await writeFile(
      launcher,
      `#!/bin/sh\necho $$ > ${shellQuote(pidFile)}\nexec ${argv.map(shellQuote).join(' ')} "$@"\n`,
    );
    await chmod(launcher, 0o700);
    const browser = await chromium.launch({
      executablePath: launcher,
      headless: true,
      args: CHROMIUM_FLAGS,
      // TMPDIR stays short: Chromium puts its singleton socket there (sun_path is 108 bytes).
      env: cleanEnvironment(dir, {
        TMPDIR: '/tmp',
        XDG_CONFIG_HOME: join(dir, 'config'),
        XDG_CACHE_HOME: join(dir, 'cache'),
      }),
      timeout: 30_000,
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    });
    const session: Session = { browser, pidFile, conversions: 0 };
    this.active = session;
    this.prepareSpare(session);
    browser.on('disconnected', () => {
      this.forget(session);
      void this.killGroup(session).finally(() => rm(dir, { recursive: true, force: true }).catch(() => undefined));
    });
    return session;
  }

  /** The launched browser this.session resolves to, once it has. */
  private active: Session | undefined;

  private forget(session: Session): void {
    if (this.active !== session) return;
    this.active = undefined;
    this.session = undefined;
    this.spare = null;
  }

  /** Drops the browser: the next conversion launches a new one. */
  private async kill(session: Session): Promise<void> {
    this.forget(session);
    await this.killGroup(session);
  }

  private async killGroup(session: Session): Promise<void> {
    const pid = Number((await readFile(session.pidFile, 'utf8').catch(() => '')).trim());
    if (!pid) return;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
