import { describe, expect, it, vi } from 'vitest';
import { ConversionError } from './conversion.error';
import { ConverterRegistry } from './converter.registry';
import type { PdfConverter } from './pdf-converter';

function fake(
  name: string,
  accepts: (input: { filename: string; contentType: string }) => boolean,
  available = { ok: true },
): PdfConverter {
  return {
    name,
    version: '1',
    maxInputBytes: 1024,
    accepts,
    convert: vi.fn(async () => undefined),
    available: vi.fn(async () => available),
    close: vi.fn(async () => undefined),
  };
}

describe('ConverterRegistry', () => {
  const office = fake('office', (i) => i.filename.endsWith('.docx'));
  const text = fake('text', (i) => i.contentType.startsWith('text/'), { ok: false, reason: 'no chromium' } as {
    ok: boolean;
  });
  const registry = new ConverterRegistry([office, text]);

  it('selects the first converter that accepts the file', () => {
    expect(registry.select({ filename: 'a.docx', contentType: 'text/plain' })).toBe(office);
    expect(registry.select({ filename: 'a.txt', contentType: 'text/plain' })).toBe(text);
    expect(registry.select({ filename: 'a.zip', contentType: 'application/zip' })).toBeNull();
  });

  it('convert hands the file to the selected converter only', async () => {
    const signal = new AbortController().signal;
    await registry.convert({ path: '/in', filename: 'a.docx', contentType: '' }, { path: '/out' }, signal);
    expect(office.convert).toHaveBeenCalledWith(
      { path: '/in', filename: 'a.docx', contentType: '' },
      { path: '/out' },
      signal,
    );
    expect(text.convert).not.toHaveBeenCalled();
  });

  it('an unsupported file is a permanent unsupported_type', async () => {
    const error = await registry
      .convert(
        { path: '/in', filename: 'a.zip', contentType: 'application/zip' },
        { path: '/out' },
        new AbortController().signal,
      )
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConversionError);
    expect((error as ConversionError).failure).toBe('unsupported_type');
    expect((error as ConversionError).isPermanent).toBe(true);
  });

  it('availability reports each converter by name, and a throwing probe as unavailable', async () => {
    const broken = fake('broken', () => false);
    broken.available = async () => {
      throw new Error('boom');
    };
    expect(await new ConverterRegistry([office, text, broken]).availability()).toEqual({
      office: { ok: true },
      text: { ok: false, reason: 'no chromium' },
      broken: { ok: false, reason: 'boom' },
    });
  });
});
