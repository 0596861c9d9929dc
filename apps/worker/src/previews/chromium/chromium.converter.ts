import { randomBytes } from 'node:crypto';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ConversionError, toConversionError } from '../conversion.error';
import { previewTypeOf } from '@app/contracts';
import { readCapped } from '../input-limits';
import type { Availability, ConversionInput, ConversionOutput, PdfConverter } from '../pdf-converter';
import type { PdfValidator } from '../pdf/pdf.validator';
import type { PreviewConverterOptions } from '../preview.options';
import { cleanEnvironment, SANDBOX_UIDS, type ProcessRunner, type SandboxIdentity } from '../sandbox/sandbox';
import { decodeText, htmlContentType, markdownToHtml, PREVIEW_CSP, textToHtml } from './html-document';

/** The page is served from this made-up origin by the request filter itself; nothing resolves it. */
export const PREVIEW_ORIGIN = 'http://preview.invalid';
const PAGE_URL = `${PREVIEW_ORIGIN}/document`;

/**
 * From the machine notes; Playwright adds --headless, --no-sandbox unless Chromium's own sandbox is kept
 * (chromiumSandbox), and a --user-data-dir of its own that the launcher script replaces with the browser's dir.
 */
const CHROMIUM_FLAGS = [
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

/** Chromium's singleton socket goes to TMPDIR/org.chromium.Chromium.XXXXXX/SingletonSocket: ≤ 107 bytes in all. */
const MAX_TMPDIR_LENGTH = 60;

interface RenderedDocument {
  contentType: string;
  body: Buffer;
}

/**
 * A fresh context with its page, made ahead of the next conversion: opening a page starts a renderer
 * process, slow next to converting a small document, so it is done while the worker waits for work. Each
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
  readonly maxInputBytes: number;
  private session: Promise<Session> | undefined;
  private probed: Promise<void> | null = null;
  private spare: Promise<Tab | null> | null = null;
  /** Every request the filter saw and aborted, newest last (tests and debug logs). */
  readonly blockedRequests: string[] = [];

  constructor(
    private readonly options: PreviewConverterOptions,
    private readonly runner: ProcessRunner,
    private readonly validator: PdfValidator,
  ) {
    this.maxInputBytes = options.chromium.maxInputBytes;
  }

  accepts(input: { contentType: string; filename: string }): boolean {
    const kind = previewTypeOf(input)?.kind;
    return kind === 'html' || kind === 'markdown' || kind === 'text';
  }

  async available(): Promise<Availability> {
    try {
      await stat(this.options.chromium.executablePath);
      if (!this.active) await this.probe();
      return { ok: true };
    } catch (error) {
      return { ok: false, reason: error instanceof Error ? error.message : String(error) };
    }
  }

  /**
   * Whether Chromium starts here, in its confinement, without Playwright: playwright-core is large and an idle
   * worker should not carry it, so it is loaded, and the browser launched, at the first conversion. A headless
   * Chromium prints an empty page's DOM and exits; once that has worked, it is not repeated.
   */
  private probe(): Promise<void> {
    this.probed ??= this.withSandboxFallback((sandbox) => this.probeWith(sandbox)).catch((error: unknown) => {
      this.probed = null;
      throw error;
    });
    return this.probed;
  }

  private async probeWith(sandbox: boolean): Promise<void> {
    const { home, cleanUp, identity } = await this.browserHome(sandbox);
    try {
      const result = await this.runner.run({
        command: this.options.chromium.executablePath,
        args: [
          '--headless',
          ...(sandbox ? [] : ['--no-sandbox']),
          ...CHROMIUM_FLAGS,
          `--user-data-dir=${join(home, 'profile')}`,
          '--dump-dom',
          'about:blank',
        ],
        identity,
        cwd: home,
        env: this.browserEnvironment(home),
        limits: { maxFileBytes: this.options.maxOutputBytes },
        timeoutMs: 30_000,
      });
      if (result.code !== 0 || !result.stdout.includes('<body>')) {
        const said = result.stderr.trim().split('\n').slice(-3).join(' | ');
        throw new Error(`Chromium exited with ${result.code ?? result.signal}: ${said}`);
      }
    } finally {
      await cleanUp();
    }
  }

  /**
   * Chromium keeps its own sandbox where the start-up probe found it possible (a non-root uid that may make user
   * namespaces); if it does not start with it (the availability probe or a launch), it runs with --no-sandbox
   * inside the same confinement, and the isolation mode says so from then on.
   */
  private async withSandboxFallback<T>(start: (sandbox: boolean) => Promise<T>): Promise<T> {
    const mode = this.runner.mode;
    this.runner.assertAllowed();
    if (mode.chromiumSandbox) {
      try {
        return await start(true);
      } catch (error) {
        mode.chromiumSandbox = false;
        const reason = (error instanceof Error ? error.message : String(error)).split('\n')[0]!.slice(0, 200);
        mode.notes.push(`Chromium's own sandbox did not start (${reason}): it runs with --no-sandbox`);
      }
    }
    return start(false);
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
    const bytes = await readCapped(input.path, this.maxInputBytes, 'rendered documents');
    const title = basename(input.filename);
    const body =
      type.kind === 'html'
        ? bytes
        : Buffer.from(
            type.kind === 'markdown'
              ? await markdownToHtml(decodeText(bytes), title)
              : textToHtml(decodeText(bytes), title),
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
    this.session ??= this.withSandboxFallback((sandbox) => this.launchWith(sandbox)).catch((error: unknown) => {
      this.session = undefined;
      throw new ConversionError(
        'unavailable',
        `cannot start Chromium: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    });
    return this.session;
  }

  /**
   * A directory of the worker's for one browser (the launcher script and the pid file, which the browser must not
   * be able to change) and, inside it, the browser's own home: profile, caches, TMPDIR (kept short: Chromium's
   * singleton socket goes there).
   */
  private async browserHome(sandbox: boolean) {
    const id = randomBytes(4).toString('hex');
    const pool = join(this.options.workDir, 'chromium');
    const dir = join(pool, id);
    await this.runner.makeSharedDir(pool);
    await this.runner.makeSharedDir(dir);
    const shortHome = join(dir, 'h');
    const home = shortHome.length <= MAX_TMPDIR_LENGTH ? shortHome : join(tmpdir(), `uhp-chromium-${id}`);
    const identity: SandboxIdentity = { uidOffset: SANDBOX_UIDS.chromium, writable: [home], procWrite: sandbox };
    const cleanUp = () =>
      Promise.all([rm(dir, { recursive: true, force: true }), rm(home, { recursive: true, force: true })])
        .then(() => undefined)
        .catch(() => undefined);
    await this.runner.makeOwnDir(home, identity);
    return { dir, home, identity, cleanUp };
  }

  private browserEnvironment(home: string): Record<string, string> {
    return cleanEnvironment(home, { XDG_CONFIG_HOME: join(home, 'config'), XDG_CACHE_HOME: join(home, 'cache') });
  }

  private async launchWith(sandbox: boolean): Promise<Session> {
    const { dir, home, identity, cleanUp } = await this.browserHome(sandbox);
    const pidFile = join(dir, 'browser.pid');
    // Playwright needs one executable; this wrapper records the group id (exec keeps the pid, and Playwright
    // starts the browser as a process group leader), puts Playwright's --user-data-dir (made by the worker, not
    // the browser's to write) in the browser's own dir, and execs the confined Chromium.
    const launcher = join(dir, 'launch.sh');
    const argv = this.runner.argv({
      command: this.options.chromium.executablePath,
      args: [],
      identity,
      limits: { maxFileBytes: this.options.maxOutputBytes },
    });
    await writeFile(
      launcher,
      [
        '#!/bin/sh',
        `echo $$ > ${shellQuote(pidFile)}`,
        'for arg do',
        '  shift',
        '  case "$arg" in',
        `    --user-data-dir=*) set -- "$@" ${shellQuote(`--user-data-dir=${join(home, 'profile')}`)} ;;`,
        '    *) set -- "$@" "$arg" ;;',
        '  esac',
        'done',
        `exec ${argv.map(shellQuote).join(' ')} "$@"`,
        '',
      ].join('\n'),
      { mode: 0o700, flag: 'wx' },
    );
    let browser: Browser;
    try {
      // Loaded at the first launch, not at start: an idle worker does not carry playwright-core.
      const { chromium } = await import('playwright-core');
      browser = await chromium.launch({
        executablePath: launcher,
        headless: true,
        chromiumSandbox: sandbox,
        args: CHROMIUM_FLAGS,
        env: this.browserEnvironment(home),
        timeout: 30_000,
        handleSIGINT: false,
        handleSIGTERM: false,
        handleSIGHUP: false,
      });
    } catch (error) {
      await this.killGroup({ pidFile } as Session);
      await cleanUp();
      throw error;
    }
    const session: Session = { browser, pidFile, conversions: 0 };
    this.active = session;
    this.prepareSpare(session);
    browser.on('disconnected', () => {
      this.forget(session);
      void this.killGroup(session).finally(cleanUp);
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
