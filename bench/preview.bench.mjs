#!/usr/bin/env node
/**
 * Preview benchmark (issue 4). In one run, on the same documents (docx, xlsx, pptx, html, md, txt, png,
 * made here with a unique marker per repetition so every first preview really converts):
 *   - first preview through the HTTP API (upload, then GET …/pdf: queue, warm converter, bucket);
 *   - cached preview (the same GET again);
 *   - the naive baseline: a cold `soffice --headless --convert-to pdf` per office file with a fresh profile;
 *   - cached preview throughput against a plain download of an artifact of the same size;
 *   - 20 concurrent identical requests for new content, and how many conversions the worker ran for them.
 * Prints medians, p95 and ratios as its section of docs/benchmarks.md; `--write-docs` (or BENCH_WRITE_DOCS=1)
 * also writes it there.
 *
 *   bash bench/run.sh preview            (BENCH_REPS=5 by default; BENCH_COLD_REPS=3)
 *
 * A measurement, not a test: it fails only when a request fails.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { deflateSync } from 'node:zlib';
import { commandOf, machineLine, reportBlock } from './support/benchmarks.mjs';
import {
  API_BASE as API,
  API_KEY as KEY,
  benchS3Client,
  ensureBucket,
  PORT_BASE,
  serviceEnv,
  ServiceStack,
} from './support/stack.mjs';

const REPS = Math.max(1, Number(process.env.BENCH_REPS ?? 5));
const COLD_REPS = Math.max(1, Number(process.env.BENCH_COLD_REPS ?? 3));
const SOFFICE = '/usr/bin/soffice';
const stack = new ServiceStack(serviceEnv(), 'preview-');

async function call(method, path, body, headers = {}) {
  const res = await fetch(`${API}${path}`, { method, body, headers: { authorization: `Bearer ${KEY}`, ...headers } });
  const bytes = Buffer.from(await res.arrayBuffer());
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${bytes.toString().slice(0, 200)}`);
  return bytes;
}

async function artifact(containerId, filename, data) {
  const form = new FormData();
  form.append('file', new Blob([data]), filename);
  return JSON.parse((await call('POST', `/v1/containers/${containerId}/files`, form)).toString());
}

async function conversions() {
  const text = await (await fetch(`http://127.0.0.1:${PORT_BASE + 2}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('uhp_preview_conversions_total{'))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}

// ---------------------------------------------------------------- documents ---
const escape = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
const paragraphs = (marker, n) =>
  Array.from(
    { length: n },
    (_, i) =>
      `Paragraph ${i + 1} of the ${marker} report. ${'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(3)}`,
  );
const NS =
  'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" office:version="1.2"';
const flat = (mime, body) =>
  `<?xml version="1.0" encoding="UTF-8"?><office:document ${NS} office:mimetype="${mime}"><office:body>${body}</office:body></office:document>`;
const fodt = (marker) =>
  flat(
    'application/vnd.oasis.opendocument.text',
    `<office:text>${paragraphs(marker, 30)
      .map((p) => `<text:p>${escape(p)}</text:p>`)
      .join('')}</office:text>`,
  );
const fods = (marker) =>
  flat(
    'application/vnd.oasis.opendocument.spreadsheet',
    `<office:spreadsheet><table:table table:name="${marker}">${Array.from({ length: 200 }, (_, r) => `<table:table-row>${Array.from({ length: 8 }, (_, c) => `<table:table-cell office:value-type="float" office:value="${r * 8 + c}"><text:p>${r * 8 + c}</text:p></table:table-cell>`).join('')}</table:table-row>`).join('')}</table:table></office:spreadsheet>`,
  );
const fodp = (marker) =>
  flat(
    'application/vnd.oasis.opendocument.presentation',
    `<office:presentation>${Array.from({ length: 5 }, (_, i) => `<draw:page draw:name="s${i}"><draw:frame svg:x="2cm" svg:y="2cm" svg:width="20cm" svg:height="3cm"><draw:text-box><text:p>${marker} slide ${i + 1}</text:p></draw:text-box></draw:frame></draw:page>`).join('')}</office:presentation>`,
  );

/** A 64×64 RGB PNG, different per marker. */
function png(marker) {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type), data]);
    const c = Buffer.alloc(4);
    c.writeUInt32BE(crc(td));
    return Buffer.concat([len, td, c]);
  };
  const size = 64;
  const seed = createHash('sha256').update(marker).digest();
  const raw = Buffer.alloc((size * 3 + 1) * size);
  for (let y = 0; y < size; y++)
    for (let x = 0; x < size; x++)
      raw.set([(x * 4 + seed[0]) & 255, (y * 4 + seed[1]) & 255, seed[2]], y * (size * 3 + 1) + 1 + x * 3);
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** Office files made by LibreOffice from flat ODF sources, one soffice call per target format. */
function officeFiles(dir, markers) {
  const profile = `file://${join(dir, 'maker-profile')}`;
  const out = {};
  for (const [ext, source, make] of [
    ['docx', 'fodt', fodt],
    ['xlsx', 'fods', fods],
    ['pptx', 'fodp', fodp],
  ]) {
    const sources = markers.map((marker) => {
      const path = join(dir, `${marker}.${source}`);
      writeFileSync(path, make(marker));
      return path;
    });
    execFileSync(
      SOFFICE,
      [`-env:UserInstallation=${profile}`, '--headless', '--convert-to', ext, '--outdir', dir, ...sources],
      { stdio: 'ignore', timeout: 300_000 },
    );
    out[ext] = markers.map((marker) => join(dir, `${marker}.${ext}`));
  }
  return out;
}

function coldSoffice(file, dir) {
  const profile = mkdtempSync(join(dir, 'cold-profile-'));
  const started = performance.now();
  execFileSync(
    SOFFICE,
    [
      `-env:UserInstallation=file://${profile}`,
      '--headless',
      '--convert-to',
      'pdf',
      '--outdir',
      join(dir, 'cold-out'),
      file,
    ],
    { stdio: 'ignore', timeout: 300_000 },
  );
  const ms = performance.now() - started;
  rmSync(profile, { recursive: true, force: true });
  return ms;
}

// ---------------------------------------------------------------- statistics ---
const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
};
const median = (v) => quantile(v, 0.5);
const p95 = (v) => quantile(v, 0.95);
const ms = (v) => `${Math.round(v)} ms`;

async function timed(fn) {
  const started = performance.now();
  const result = await fn();
  return { ms: performance.now() - started, result };
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'uhp-preview-bench-'));
  try {
    const markers = Array.from({ length: REPS }, () => `m${randomBytes(5).toString('hex')}`);
    console.log(`preview bench: making ${REPS} documents per format …`);
    // One more of each office format, for the warm-up only: a measured first preview must never be a cache hit.
    const office = officeFiles(dir, [...markers, `w${randomBytes(5).toString('hex')}`]);
    const formats = {
      docx: (i) => readFileSync(office.docx[i]),
      xlsx: (i) => readFileSync(office.xlsx[i]),
      pptx: (i) => readFileSync(office.pptx[i]),
      html: (i) =>
        Buffer.from(
          `<html><body><h1>${markers[i]}</h1>${paragraphs(markers[i], 30)
            .map((p) => `<p>${p}</p>`)
            .join('')}</body></html>`,
        ),
      md: (i) => Buffer.from(`# ${markers[i]}\n\n${paragraphs(markers[i], 30).join('\n\n')}\n`),
      txt: (i) => Buffer.from(`${markers[i]}\n${paragraphs(markers[i], 30).join('\n')}\n`),
      png: (i) => png(markers[i]),
    };

    console.log('preview bench: cold soffice --convert-to pdf with a fresh profile …');
    const cold = {};
    for (const ext of ['docx', 'xlsx', 'pptx'])
      cold[ext] = Array.from({ length: Math.min(COLD_REPS, REPS) }, (_, i) => coldSoffice(office[ext][i], dir));

    const s3 = benchS3Client();
    await ensureBucket(s3);
    s3.destroy();
    await stack.start();
    const session = JSON.parse(
      (await call('POST', '/v1/sessions', JSON.stringify({}), { 'content-type': 'application/json' })).toString(),
    );
    const container = session.container_id;
    // One warm-up conversion per converter family, so the first measured preview is not a pool start.
    for (const [name, data] of [
      ['warm.docx', readFileSync(office.docx[REPS])],
      ['warm.txt', Buffer.from('warm up')],
      ['warm.png', png(`warm-${randomBytes(4).toString('hex')}`)],
    ]) {
      const file = await artifact(
        container,
        name.replace('warm', `warm-${randomBytes(3).toString('hex')}`),
        Buffer.concat([data, name.endsWith('.txt') ? Buffer.from(randomBytes(4).toString('hex')) : Buffer.alloc(0)]),
      );
      await call('GET', `/v1/containers/${container}/files/${file.id}/pdf`);
    }

    const results = {};
    for (const [ext, make] of Object.entries(formats)) {
      const first = [];
      const cached = [];
      for (let i = 0; i < REPS; i++) {
        const file = await artifact(container, `${markers[i]}.${ext}`, make(i));
        first.push((await timed(() => call('GET', `/v1/containers/${container}/files/${file.id}/pdf`))).ms);
        cached.push((await timed(() => call('GET', `/v1/containers/${container}/files/${file.id}/pdf`))).ms);
      }
      results[ext] = { first, cached };
      console.log(
        `${ext.padEnd(5)} first ${ms(median(first))} (p95 ${ms(p95(first))})  cached ${ms(median(cached))} (p95 ${ms(p95(cached))})${cold[ext] ? `  cold soffice ${ms(median(cold[ext]))} (p95 ${ms(p95(cold[ext]))})  ratio ${(median(first) / median(cold[ext])).toFixed(3)}` : ''}`,
      );
    }

    // Cached preview vs plain download of the same number of bytes (the PDF itself uploaded as an artifact).
    const docxFile = await artifact(container, `tp-${markers[0]}.docx`, formats.docx(0));
    const pdfPath = `/v1/containers/${container}/files/${docxFile.id}/pdf`;
    const pdf = await call('GET', pdfPath);
    const plain = await artifact(container, 'same-bytes.bin', pdf);
    const plainPath = `/v1/containers/${container}/files/${plain.id}/content`;
    const N = 200;
    const throughput = async (path) => {
      const { ms: elapsed } = await timed(async () => {
        for (let i = 0; i < N; i++) await call('GET', path);
      });
      return (N * pdf.length) / (elapsed / 1000) / 1e6;
    };
    await throughput(plainPath);
    const plainMBps = median([await throughput(plainPath), await throughput(plainPath), await throughput(plainPath)]);
    const cachedMBps = median([await throughput(pdfPath), await throughput(pdfPath), await throughput(pdfPath)]);
    console.log(
      `cached preview ${cachedMBps.toFixed(1)} MB/s vs plain download ${plainMBps.toFixed(1)} MB/s of ${pdf.length} bytes: ratio ${(cachedMBps / plainMBps).toFixed(2)}`,
    );

    // 20 concurrent identical first requests.
    const otherMarker = `c${randomBytes(5).toString('hex')}`;
    const fresh = officeFiles(mkdtempSync(join(dir, 'fresh-')), [otherMarker]).docx[0];
    const target = await artifact(container, `${otherMarker}.docx`, readFileSync(fresh));
    const before = await conversions();
    const burst = await timed(() =>
      Promise.all(Array.from({ length: 20 }, () => call('GET', `/v1/containers/${container}/files/${target.id}/pdf`))),
    );
    const burstConversions = (await conversions()) - before;
    const identical = new Set(burst.result.map((b) => b.toString('base64'))).size === 1;
    console.log(
      `20 concurrent first requests: ${burstConversions} conversion(s), identical answers: ${identical}, all done in ${ms(burst.ms)}`,
    );

    const officeFirst = ['docx', 'xlsx', 'pptx'].map((ext) => median(results[ext].first) / median(cold[ext]));
    const summary = {
      results,
      cold,
      plainMBps,
      cachedMBps,
      pdfBytes: pdf.length,
      burstConversions,
      burstMs: burst.ms,
      identical,
      officeFirst,
    };
    reportBlock('preview', docsOf(summary));
  } finally {
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function docsOf(s) {
  const pair = (values) => `${ms(median(values))} / ${ms(p95(values))}`;
  const rows = Object.entries(s.results).map(([ext, r]) => {
    const cold = s.cold[ext];
    return [
      ext,
      cold ? `**${(median(r.first) / median(cold)).toFixed(3)}**` : '–',
      pair(r.first),
      pair(r.cached),
      cold ? pair(cold) : '–',
    ];
  });
  return {
    machine: machineLine(),
    command: commandOf('preview'),
    rows,
    notes: [
      `${(s.cachedMBps / s.plainMBps).toFixed(2)} (${s.cachedMBps.toFixed(2)} vs ${s.plainMBps.toFixed(2)} MB/s, ` +
        `200 sequential GETs of the same ${s.pdfBytes} bytes, median of 3).`,
      `${s.burstConversions} conversion(s) for one new docx, identical answers: ${s.identical}, ${ms(s.burstMs)} ` +
        'for all.',
    ],
  };
}

main().catch((error) => {
  console.error(error);
  void stack.stop();
  process.exitCode = 1;
});
