import { Readable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import type { ObjectStore } from '@app/common';
import type { StoredObjectRepository } from '@app/db';
import { ConversionError } from './conversion.error';
import { PreviewSources } from './preview-sources';

const MiB = 1024 * 1024;

function sources(recordedBytes: bigint, body = Buffer.alloc(0), status = 'READY') {
  const objects = {
    find: vi.fn(async (id: string) => ({ id, principalId: 'p', storageKey: `objects/${id}`, status, refCount: 1 })),
    sizeOf: vi.fn(async () => recordedBytes),
  } as unknown as StoredObjectRepository;
  const store = { get: vi.fn(async () => ({ body: Readable.from([body]) })) };
  return { sources: new PreviewSources(objects, store as unknown as ObjectStore), store };
}

async function failure(promise: Promise<unknown>): Promise<ConversionError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConversionError);
  return error as ConversionError;
}

describe('PreviewSources.fetch', () => {
  it("a source recorded over the converter's limit is a permanent too_large, and not a byte of it is fetched", async () => {
    const { sources: s, store } = sources(200n * BigInt(MiB));
    const error = await failure(s.fetch('o1', '/dev/null', 100 * MiB));
    expect([error.failure, error.isPermanent]).toEqual(['too_large', true]);
    expect(store.get).not.toHaveBeenCalled();
  });

  it('the stream is cut at the limit whatever the record says', async () => {
    const { sources: s, store } = sources(10n, Buffer.alloc(4096));
    const error = await failure(s.fetch('o1', '/dev/null', 1024));
    expect(error.failure).toBe('too_large');
    expect(store.get).toHaveBeenCalledTimes(1);
  });

  it('a source within the limit is streamed; a deleted source is a permanent corrupt_document', async () => {
    await sources(4n, Buffer.from('text')).sources.fetch('o1', '/dev/null', 1024);
    const gone = await failure(sources(4n, Buffer.alloc(0), 'PURGING').sources.fetch('o1', '/dev/null', 1024));
    expect([gone.failure, gone.isPermanent]).toEqual(['corrupt_document', true]);
  });
});
