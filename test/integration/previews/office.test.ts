import { randomBytes, randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConversionError } from '../../../apps/worker/src/previews/conversion.error';
import { createPreviewConverters, type PreviewConverters } from '../../../apps/worker/src/previews/converter.registry';
import {
  docx,
  makeOfficeSamples,
  ods,
  odt,
  paragraph,
  pdfText,
  qpdfCheck,
  xlsx,
  zip,
  type GeneratedOfficeFormat,
} from '../../support/preview-fixtures';

const run = promisify(execFile);
const MARKER = `Marker${randomUUID().slice(0, 8)}`;
const SECRET = `canary-secret-${randomUUID()}`;

let dir: string;
let samples: Record<GeneratedOfficeFormat, string>;
let converters: PreviewConverters;
let server: Server;
let serverHits: string[] = [];
let serverUrl: string;

async function convert(
  source: string,
  filename: string,
  contentType = 'application/octet-stream',
  signal = new AbortController().signal,
): Promise<string> {
  const out = join(dir, `${randomUUID()}.pdf`);
  await converters.office.convert({ path: source, filename, contentType }, { path: out }, signal);
  return out;
}

async function write(name: string, content: Buffer | string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

async function caught(promise: Promise<unknown>): Promise<ConversionError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConversionError);
  return error as ConversionError;
}

/** False once the process is gone or a zombie (the container's init may reap late). */
async function isRunning(pid: number | undefined): Promise<boolean> {
  if (!pid) return false;
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  return stat !== null && !/^\d+ \(.*\) Z/.test(stat);
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** pids of processes whose command line mentions `needle`. */
async function processesMentioning(needle: string): Promise<number[]> {
  const { stdout } = await run('ps', ['-eo', 'pid=,args=']);
  return stdout
    .split('\n')
    .filter((line) => line.includes(needle) && !line.includes('ps -eo'))
    .map((line) => Number(line.trim().split(/\s+/)[0]));
}

beforeAll(async () => {
  process.env.UHP_PREVIEW_TEST_SECRET = SECRET; // must never reach a converter process
  dir = await mkdtemp(join(tmpdir(), 'uhp-office-test-'));
  await chmod(dir, 0o711); // converters of other uids pass through to their own dirs beneath it
  server = createServer((req, res) => {
    serverHits.push(req.url ?? '');
    res.end('fetched');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  serverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  samples = await makeOfficeSamples(join(dir, 'samples'), MARKER);
  converters = await createPreviewConverters({
    workDir: join(dir, 'work'),
    timeoutMs: 30_000,
    office: { poolSize: 2, maxConversionsPerProcess: 3 },
  });
  await converters.office.warmUp();
});

afterAll(async () => {
  await converters?.registry.close();
  server?.close();
  delete process.env.UHP_PREVIEW_TEST_SECRET;
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('office documents through the warm LibreOffice pool', () => {
  it.each(['doc', 'docx', 'odt', 'rtf', 'xls', 'xlsx', 'ods', 'ppt', 'pptx', 'odp'] as const)(
    '%s converts to a valid PDF with the source text',
    async (format) => {
      const out = await convert(samples[format], `report.${format}`);
      expect((await readFile(out)).subarray(0, 5).toString()).toBe('%PDF-');
      expect(await qpdfCheck(out)).toBe(0);
      expect(await pdfText(out)).toContain(MARKER);
    },
  );

  it('csv converts through the forced CSV filter (UTF-8, comma)', async () => {
    const source = await write('table.csv', `city,note\nZürich,${MARKER}\n`);
    const text = await pdfText(await convert(source, 'table.csv', 'text/csv'));
    expect(text).toContain(MARKER);
    expect(text).toContain('Zürich');
  });

  it('an input over the office byte limit is a permanent too_large, before LibreOffice sees it', async () => {
    const small = await createPreviewConverters({ workDir: join(dir, 'small'), office: { maxInputBytes: 1_000 } });
    try {
      const source = await write('big.csv', `a,b\n${'x,y\n'.repeat(400)}`);
      const error = await caught(
        small.office.convert(
          { path: source, filename: 'big.csv', contentType: 'text/csv' },
          { path: join(dir, 'big.pdf') },
          new AbortController().signal,
        ),
      );
      expect([error.failure, error.isPermanent]).toEqual(['too_large', true]);
      expect(small.office.state().every((slot) => slot.pid === undefined)).toBe(true);
    } finally {
      await small.registry.close();
    }
  });

  it('random bytes named .docx fail fast with a permanent error', async () => {
    const source = await write('random.docx', randomBytes(1024 * 1024));
    const started = Date.now();
    const error = await caught(convert(source, 'random.docx'));
    expect(error.failure).toBe('corrupt_document');
    expect(error.isPermanent).toBe(true);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('a zip that is no OOXML package named .docx is refused by the forced import filter, not guessed at', async () => {
    const source = await write('not-ooxml.docx', zip([['hello.txt', `${MARKER} `.repeat(2000)]]));
    const started = Date.now();
    const error = await caught(convert(source, 'not-ooxml.docx'));
    expect(error.failure).toBe('corrupt_document');
    expect(error.isPermanent).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('an unsupported type is a permanent unsupported_type', async () => {
    const source = await write('archive.zip', 'PK');
    const error = await caught(convert(source, 'archive.zip', 'application/zip'));
    expect(error.failure).toBe('unsupported_type');
    expect(error.isPermanent).toBe(true);
  });

  it('two conversions at once run on the two members of the pool and both succeed', async () => {
    const before = converters.office.state();
    expect(before.every((slot) => slot.pid !== undefined && !slot.busy)).toBe(true);
    const pending = (['docx', 'pptx'] as const).map((format) => convert(samples[format], `together.${format}`));
    await waitFor(() => converters.office.state().filter((slot) => slot.busy).length === 2, 'both members busy', 2_000);
    const [a, b] = await Promise.all(pending);
    expect(await pdfText(a!)).toContain(MARKER);
    expect(await pdfText(b!)).toContain(MARKER);
    const after = converters.office.state();
    // Each member either ran one more conversion or was replaced after reaching its limit.
    for (const [index, slot] of after.entries()) {
      const was = before[index]!;
      expect(slot.generation > was.generation || slot.conversions === was.conversions + 1).toBe(true);
    }
  });
});

describe('the sandbox around LibreOffice', () => {
  it('soffice runs in its own network namespace, with a clean environment and the address-space limit', async () => {
    await convert(samples.odt, 'probe.odt');
    const slot = converters.office.state().find((s) => s.sofficePid !== undefined)!;
    const sofficeBin = slot.sofficePid!;
    expect((await readFile(`/proc/${sofficeBin}/cmdline`, 'utf8')).split('\0')[0]).toMatch(/soffice\.bin$/);
    expect(await readlink(`/proc/${sofficeBin}/ns/net`)).not.toBe(await readlink('/proc/self/ns/net'));
    const environ = (await readFile(`/proc/${sofficeBin}/environ`, 'utf8')).split('\0');
    expect(environ.join('\n')).not.toContain(SECRET);
    expect(environ.filter((entry) => /^(PATH|HOME|LANG)=/.test(entry)).length).toBe(3);
    expect(environ.some((entry) => /^(AWS_|S3_|DATABASE_URL|REDIS_URL|STORAGE_TOKEN)/.test(entry))).toBe(false);
    const limits = await readFile(`/proc/${sofficeBin}/limits`, 'utf8');
    expect(limits).toMatch(new RegExp(`Max address space\\s+${converters.options.office.addressSpaceBytes}\\s`));
    expect(limits).toMatch(/Max core file size\s+0\s/);
  });

  it('file:// links and included files are not followed: the PDF holds the stored text, not /etc/passwd or /proc/self/environ', async () => {
    const passwdLine = (await readFile('/etc/passwd', 'utf8')).split('\n')[0]!; // root:x:0:0:…
    const linkedSection = odt(
      `<text:p>${MARKER} before</text:p>` +
        `<text:section text:name="linked"><text:section-source xlink:type="simple" xlink:href="file:///etc/passwd" text:filter-name="Text"/><text:p>stored section text</text:p></text:section>` +
        `<text:section text:name="environ"><text:section-source xlink:type="simple" xlink:href="file:///proc/self/environ" text:filter-name="Text"/><text:p>stored environ text</text:p></text:section>`,
    );
    const includeText = docx(
      paragraph(`${MARKER} docx`) +
        `<w:p><w:fldSimple w:instr=' INCLUDETEXT "/etc/passwd" '><w:r><w:t>stored include</w:t></w:r></w:fldSimple></w:p>` +
        `<w:p><w:fldSimple w:instr=' INCLUDETEXT "/proc/self/environ" '><w:r><w:t>stored environ include</w:t></w:r></w:fldSimple></w:p>`,
    );
    for (const [name, bytes] of [
      ['linked.odt', linkedSection],
      ['include.docx', includeText],
    ] as const) {
      const text = await pdfText(await convert(await write(name, bytes), name));
      expect(text).toContain(MARKER);
      expect(text).not.toContain(passwdLine);
      expect(text).not.toContain('root:x:0:0');
      expect(text).not.toMatch(/PATH=|HOME=|LANG=/);
    }
  });

  it('external images and links in documents cause no request to a local HTTP server', async () => {
    serverHits = [];
    const linkedImage = docx(
      paragraph(`${MARKER} external image`) +
        `<w:p><w:r><w:drawing><wp:inline><wp:extent cx="914400" cy="914400"/><wp:docPr id="1" name="remote"/><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic><pic:nvPicPr><pic:cNvPr id="1" name="remote.png"/><pic:cNvPicPr/></pic:nvPicPr><pic:blipFill><a:blip r:link="rIdImg"/></pic:blipFill><pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="914400" cy="914400"/></a:xfrm><a:prstGeom prst="rect"/></pic:spPr></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>` +
        `<w:p><w:fldSimple w:instr=' INCLUDETEXT "${serverUrl}/included.txt" '><w:r><w:t>stored remote include</w:t></w:r></w:fldSimple></w:p>`,
      [
        {
          id: 'rIdImg',
          type: 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/image',
          target: `${serverUrl}/docx-image.png`,
          external: true,
        },
      ],
    );
    const odtImage = odt(
      `<text:p>${MARKER} odt image</text:p><text:p><draw:frame draw:name="img" svg:width="2cm" svg:height="2cm"><draw:image xlink:type="simple" xlink:href="${serverUrl}/odt-image.png"/></draw:frame></text:p>` +
        `<text:section text:name="remote"><text:section-source xlink:type="simple" xlink:href="${serverUrl}/section.txt" text:filter-name="Text"/><text:p>stored remote section</text:p></text:section>`,
    );
    const started = Date.now();
    await convert(await write('remote.docx', linkedImage), 'remote.docx');
    await convert(await write('remote.odt', odtImage), 'remote.odt');
    expect(Date.now() - started).toBeLessThan(8_000); // an unreachable image would cost 10 s each
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(serverHits).toEqual([]);

    // Control: the same document through a plain soffice (stock profile, no sandbox) does fetch the image,
    // so the assertion above is about our hardening, not an inert fixture.
    const profile = join(dir, 'control-profile');
    await run('mkdir', ['-p', join(profile, 'user')]);
    await writeFile(
      join(profile, 'user', 'registrymodifications.xcu'),
      '<?xml version="1.0" encoding="UTF-8"?><oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><item oor:path="/org.openoffice.Setup/Product"><prop oor:name="ooSetupLastVersion" oor:op="fuse"><value>7.4</value></prop></item></oor:items>',
    );
    await run(
      'soffice',
      [
        '--headless',
        '--norestore',
        `-env:UserInstallation=file://${profile}`,
        '--convert-to',
        'pdf',
        '--outdir',
        join(dir, 'control'),
        join(dir, 'remote.docx'),
      ],
      { env: { PATH: '/usr/bin:/bin', HOME: profile, LANG: 'C.UTF-8' }, timeout: 60_000 },
    );
    expect(serverHits).toContain('/docx-image.png');
  });
});

describe('formulas are shown as stored, never computed on load', () => {
  it('xlsx and ods: a formula shows its cached value, not what recalculating would give', async () => {
    const sheet = xlsx(
      `<c r="A1"><f>6*7</f><v>1234567</v></c>` +
        `<c r="B1" t="str"><f>_xlfn.WEBSERVICE("${serverUrl}/xlsx")</f><v>cached-webservice</v></c>` +
        `<c r="C1" t="inlineStr"><is><t>${MARKER}</t></is></c>`,
    );
    const text = await pdfText(await convert(await write('cached.xlsx', sheet), 'cached.xlsx'));
    expect(text).toContain(MARKER);
    expect(text).toContain('1234567');
    expect(text).not.toMatch(/\b42\b/);
    // WEBSERVICE() is never taken from the cache: Calc evaluates it, with external content blocked (Err:540).
    expect(text).not.toContain('fetched');
    // A styled cell: LibreOffice computes an unstyled formula cell once on load anyway, to find its number format.
    const calc = ods(
      `<table:table-cell table:style-name="Default" table:formula="of:=6*7" office:value-type="float" office:value="7654321"><text:p>7654321</text:p></table:table-cell>` +
        `<table:table-cell office:value-type="string"><text:p>${MARKER}</text:p></table:table-cell>`,
    );
    const odsText = await pdfText(await convert(await write('cached.ods', calc), 'cached.ods'));
    expect(odsText).toContain(MARKER);
    expect(odsText).toContain('7654321');
    expect(odsText).not.toMatch(/\b42\b/);
  });

  it('csv: a cell that looks like a formula stays text; WEBSERVICE() sends no request, even with the network open', async () => {
    // Network isolation off: only the import settings stand between the document and the test server.
    const open = await createPreviewConverters({
      workDir: join(dir, 'formulas-open'),
      office: { poolSize: 1 },
      sandbox: { network: 'off' },
    });
    try {
      serverHits = [];
      const csv = `label,value\n${MARKER},=1+1\nweb,"=WEBSERVICE(""${serverUrl}/csv"")"\n`;
      const out = join(dir, 'formulas.pdf');
      await open.office.convert(
        { path: await write('formulas.csv', csv), filename: 'formulas.csv', contentType: 'text/csv' },
        { path: out },
        new AbortController().signal,
      );
      const text = await pdfText(out);
      expect(text).toContain(MARKER);
      expect(text).toContain('=1+1');
      expect(text).toContain(`=WEBSERVICE("${serverUrl}/csv")`);
      const xlsxOut = join(dir, 'webservice.pdf');
      await open.office.convert(
        {
          path: await write(
            'webservice.xlsx',
            xlsx(`<c r="A1" t="str"><f>_xlfn.WEBSERVICE("${serverUrl}/xlsx")</f><v>cached-webservice</v></c>`),
          ),
          filename: 'webservice.xlsx',
          contentType: '',
        },
        { path: xlsxOut },
        new AbortController().signal,
      );
      expect(await pdfText(xlsxOut)).not.toContain('fetched');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(serverHits).toEqual([]);
    } finally {
      await open.registry.close();
    }
  });
});

describe('pool member restarts', () => {
  it('a member is replaced after maxConversionsPerProcess conversions', async () => {
    // Serialise onto one observable member: run until some slot's generation moves.
    const before = converters.office.state();
    for (let i = 0; i < 2 * converters.options.office.maxConversionsPerProcess; i++)
      await convert(samples.odt, `count-${i}.odt`);
    const after = converters.office.state();
    const moved = after.filter((slot, index) => slot.generation > before[index]!.generation);
    expect(moved.length).toBeGreaterThan(0);
    for (const slot of after) expect(slot.conversions).toBeLessThan(converters.options.office.maxConversionsPerProcess);
  });

  it('a conversion over the time limit is killed with its whole process group and its member restarts', async () => {
    const slow = await createPreviewConverters({
      workDir: join(dir, 'slow'),
      timeoutMs: 1_500,
      office: { poolSize: 1 },
    });
    try {
      await slow.office.warmUp();
      const first = slow.office.state()[0]!;
      const rows = Array.from(
        { length: 60_000 },
        (_, i) => `${i},${MARKER}-${i},${i * 7},some filler text to lay out`,
      ).join('\n');
      const source = await write('huge.csv', `n,label,value,filler\n${rows}\n`);
      const started = Date.now();
      const error = await caught(
        slow.office.convert(
          { path: source, filename: 'huge.csv', contentType: 'text/csv' },
          { path: join(dir, 'huge.pdf') },
          new AbortController().signal,
        ),
      );
      expect(error.failure).toBe('timeout');
      expect(error.isPermanent).toBe(false);
      expect(Date.now() - started).toBeLessThan(6_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await isRunning(first.pid)).toBe(false);
      expect(await isRunning(first.sofficePid)).toBe(false);
      expect(await processesMentioning(`${join(dir, 'slow', 'office', '0-1')}`)).toEqual([]);
      // The member is replaced and converts again.
      const out = join(dir, 'after-timeout.pdf');
      await slow.office.convert(
        { path: samples.docx, filename: 'after.docx', contentType: '' },
        { path: out },
        new AbortController().signal,
      );
      expect(await pdfText(out)).toContain(MARKER);
      expect(slow.office.state()[0]!.generation).toBeGreaterThan(first.generation);
    } finally {
      await slow.registry.close();
    }
  });

  it('soffice killed while idle: the member is replaced before the next conversion, which succeeds', async () => {
    const solo = await createPreviewConverters({ workDir: join(dir, 'solo'), office: { poolSize: 1 } });
    try {
      await solo.office.warmUp();
      const first = solo.office.state()[0]!;
      process.kill(first.sofficePid!, 'SIGKILL');
      await waitFor(async () => !(await isRunning(first.pid)), 'the bridge to exit with its soffice');
      const out = join(dir, 'after-kill.pdf');
      await solo.office.convert(
        { path: samples.docx, filename: 'b.docx', contentType: '' },
        { path: out },
        new AbortController().signal,
      );
      expect(await pdfText(out)).toContain(MARKER);
      expect(solo.office.state()[0]!.generation).toBeGreaterThan(first.generation);
    } finally {
      await solo.registry.close();
    }
  });

  it('soffice killed mid-conversion: a transient process_crashed, then the replacement converts', async () => {
    const solo = await createPreviewConverters({ workDir: join(dir, 'crash'), office: { poolSize: 1 } });
    try {
      await solo.office.warmUp();
      const first = solo.office.state()[0]!;
      const rows = Array.from({ length: 60_000 }, (_, i) => `${i},${MARKER}-${i},${i * 7}`).join('\n');
      const source = await write('crash.csv', `n,label,value\n${rows}\n`);
      const pending = solo.office.convert(
        { path: source, filename: 'crash.csv', contentType: 'text/csv' },
        { path: join(dir, 'crash.pdf') },
        new AbortController().signal,
      );
      await waitFor(() => solo.office.state()[0]!.busy, 'the conversion to start');
      await new Promise((resolve) => setTimeout(resolve, 500));
      process.kill(first.sofficePid!, 'SIGKILL');
      const error = await caught(pending);
      expect(error.failure).toBe('process_crashed');
      expect(error.isPermanent).toBe(false);
      const out = join(dir, 'after-crash.pdf');
      await solo.office.convert(
        { path: samples.docx, filename: 'c.docx', contentType: '' },
        { path: out },
        new AbortController().signal,
      );
      expect(await pdfText(out)).toContain(MARKER);
      expect(solo.office.state()[0]!.generation).toBeGreaterThan(first.generation);
    } finally {
      await solo.registry.close();
    }
  });

  it('an address-space limit too small for soffice makes the converter unavailable, not a permanent document failure', async () => {
    const tiny = await createPreviewConverters({
      workDir: join(dir, 'tiny'),
      office: { poolSize: 1, addressSpaceBytes: 64 * 1024 * 1024, startTimeoutMs: 5_000 },
    });
    try {
      const availability = await tiny.office.available();
      expect(availability.ok).toBe(false);
      const error = await caught(
        tiny.office.convert(
          { path: samples.docx, filename: 'a.docx', contentType: '' },
          { path: join(dir, 'tiny.pdf') },
          new AbortController().signal,
        ),
      );
      expect(error.isPermanent).toBe(false);
    } finally {
      await tiny.registry.close();
    }
  });
});
