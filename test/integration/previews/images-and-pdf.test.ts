import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConversionError } from '../../../apps/worker/src/previews/conversion.error';
import { createPreviewConverters, type PreviewConverters } from '../../../apps/worker/src/previews/converter.registry';
import { qpdfCheck } from '../../support/preview-fixtures';

const run = promisify(execFile);
let dir: string;
let converters: PreviewConverters;

async function failure(promise: Promise<unknown>): Promise<ConversionError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConversionError);
  return error as ConversionError;
}

async function convert(filename: string, bytes: Buffer, contentType = 'application/octet-stream'): Promise<string> {
  const source = join(dir, `${randomUUID()}-${filename}`);
  await writeFile(source, bytes);
  const out = join(dir, `${randomUUID()}.pdf`);
  await converters.registry.convert(
    { path: source, filename, contentType },
    { path: out },
    new AbortController().signal,
  );
  return out;
}

/** `pdfimages -list`: one row per image with its pixel size. */
async function images(pdf: string): Promise<Array<{ width: number; height: number }>> {
  const { stdout } = await run('pdfimages', ['-list', pdf]);
  return stdout
    .split('\n')
    .slice(2)
    .filter((line) => line.trim())
    .map((line) => line.trim().split(/\s+/))
    .filter((cols) => cols[2] === 'image')
    .map((cols) => ({ width: Number(cols[3]), height: Number(cols[4]) }));
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'uhp-image-test-'));
  await chmod(dir, 0o711); // converters of other uids pass through to their own dirs beneath it
  converters = await createPreviewConverters({
    workDir: join(dir, 'work'),
    image: { maxInputPixels: 50_000_000, maxPlacedPixels: 4000 },
  });
});

afterAll(async () => {
  await converters?.registry.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('images on PDF pages', () => {
  const picture = () =>
    sharp({ create: { width: 320, height: 200, channels: 4, background: { r: 200, g: 30, b: 30, alpha: 0.8 } } });

  it.each([
    ['photo.png', () => picture().png().toBuffer()],
    ['photo.jpg', () => picture().flatten().jpeg().toBuffer()],
    ['photo.gif', () => picture().gif().toBuffer()],
    ['photo.webp', () => picture().webp().toBuffer()],
  ] as const)('%s becomes a one-page PDF holding the image at its size', async (name, make) => {
    const out = await convert(name, await make());
    expect((await readFile(out)).subarray(0, 5).toString()).toBe('%PDF-');
    expect(await qpdfCheck(out)).toBe(0);
    const { stdout } = await run('pdfinfo', [out]);
    expect(stdout).toMatch(/Pages:\s+1\n/);
    expect(stdout).toMatch(/Page size:\s+841\.89 x 595\.2\d? pts/); // landscape A4 for a wide image
    expect(await images(out)).toContainEqual({ width: 320, height: 200 });
  });

  it('the content type decides for a name without extension', async () => {
    const out = await convert('upload', await picture().png().toBuffer(), 'image/png');
    expect(await images(out)).toContainEqual({ width: 320, height: 200 });
  });

  it('an EXIF-rotated JPEG is placed upright', async () => {
    const rotated = await sharp({ create: { width: 300, height: 100, channels: 3, background: 'blue' } })
      .jpeg()
      .withMetadata({ orientation: 6 })
      .toBuffer();
    const out = await convert('rotated.jpeg', rotated);
    expect(await images(out)).toContainEqual({ width: 100, height: 300 });
  });

  it('many images at once: each PDF holds its own image, failures stay apart, the renderer leaves no file', async () => {
    const sizes = [101, 102, 103, 104, 105, 106, 107, 108];
    const results = await Promise.allSettled([
      ...sizes.map(async (width) =>
        convert(
          `many-${width}.png`,
          await sharp({ create: { width, height: 50, channels: 3, background: 'green' } })
            .png()
            .toBuffer(),
        ),
      ),
      convert('many-broken-1.png', randomBytes(2048)),
      convert('many-broken-2.jpg', randomBytes(2048)),
    ]);
    for (const [i, width] of sizes.entries()) {
      const result = results[i]!;
      expect(result.status).toBe('fulfilled');
      if (result.status === 'fulfilled') expect(await images(result.value)).toEqual([{ width, height: 50 }]);
    }
    for (const result of results.slice(sizes.length)) {
      expect(result.status).toBe('rejected');
      if (result.status === 'rejected') expect((result.reason as ConversionError).failure).toBe('corrupt_document');
    }
    expect(await readdir(converters.image.dir)).toEqual([]);
  });

  it('random bytes named .png are a permanent corrupt_document', async () => {
    const error = await failure(convert('broken.png', randomBytes(4096)));
    expect(error.failure).toBe('corrupt_document');
    expect(error.isPermanent).toBe(true);
  });

  it('a PNG that declares more pixels than allowed is refused before decoding (too_large)', async () => {
    const huge = await sharp({ create: { width: 10_000, height: 6_000, channels: 3, background: 'white' } })
      .png({ compressionLevel: 9 })
      .toBuffer();
    const error = await failure(convert('bomb.png', huge));
    expect(error.failure).toBe('too_large');
    expect(error.isPermanent).toBe(true);
  });
});

describe('PDF passthrough', () => {
  it('a valid PDF is returned byte for byte', async () => {
    const source = join(dir, 'source.txt');
    await writeFile(source, 'passthrough text');
    const made = join(dir, 'made.pdf');
    await converters.chromium.convert(
      { path: source, filename: 'source.txt', contentType: 'text/plain' },
      { path: made },
      new AbortController().signal,
    );
    const out = await convert('document.pdf', await readFile(made), 'application/pdf');
    expect((await readFile(out)).equals(await readFile(made))).toBe(true);
  });

  it('a file named .pdf that is not one is a permanent corrupt_document', async () => {
    const notPdf = await failure(convert('fake.pdf', Buffer.from('hello, not a pdf')));
    expect(notPdf.failure).toBe('corrupt_document');
    expect(notPdf.isPermanent).toBe(true);
    const truncated = await failure(
      convert(
        'truncated.pdf',
        Buffer.from(
          '%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >>\nendobj\n' + randomBytes(2000).toString('latin1'),
        ),
      ),
    );
    expect(truncated.failure).toBe('corrupt_document');
  });
});

describe('the registry', () => {
  it('reports every converter available on a machine with the tools installed', async () => {
    const availability = await converters.registry.availability();
    expect(availability).toEqual({
      pdf: { ok: true },
      libreoffice: { ok: true },
      chromium: { ok: true },
      image: { ok: true },
    });
  });

  it('reports a converter whose binary is missing as unavailable with a reason', async () => {
    const broken = await createPreviewConverters({
      workDir: join(dir, 'broken'),
      chromium: { executablePath: '/nonexistent/chromium' },
      office: { sofficePath: '/nonexistent/soffice.bin' },
    });
    try {
      const availability = await broken.registry.availability();
      expect(availability.chromium!.ok).toBe(false);
      expect(availability.libreoffice!.ok).toBe(false);
      expect(availability.libreoffice!.reason).toBeTruthy();
      expect(availability.image!.ok).toBe(true);
    } finally {
      await broken.registry.close();
    }
  });

  it('an unsupported type is a permanent unsupported_type', async () => {
    const error = await failure(convert('archive.zip', Buffer.from('PK\x03\x04'), 'application/zip'));
    expect(error.failure).toBe('unsupported_type');
    expect(error.isPermanent).toBe(true);
  });
});
