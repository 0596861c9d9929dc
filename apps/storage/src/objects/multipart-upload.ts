import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
  UploadPartCopyCommand,
} from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import type { PartBufferPool } from './part-buffer-pool';

export interface MultipartTarget {
  client: S3Client;
  bucket: string;
  key: string;
  contentType: string;
}

/**
 * Where each multipart upload is recorded while it is open (the s3_multipart_uploads journal in
 * Postgres): opened, each part S3 acknowledged, and closed once completed or aborted.
 */
export interface MultipartJournal {
  /** Returns the journal's id of the upload. */
  opened(key: string, uploadId: string): Promise<string>;
  partStored(id: string, partNumber: number, bytes: number, etag: string): Promise<void>;
  closed(uploadId: string): Promise<void>;
}

export interface MultipartSettings {
  partSize: number;
  /** Parts of this upload in flight at once. */
  queueSize: number;
  pool: PartBufferPool;
  journal: MultipartJournal;
}

/**
 * Streams `body` into one S3 object: bytes are copied into part buffers borrowed from the shared pool;
 * a full buffer is sent as a part (up to `queueSize` at once) and goes back to the pool when its request
 * ends. A body smaller than one part is a single PUT. Reading pauses while this upload waits for a
 * buffer or for a slot, so back-pressure reaches the sender. On any failure — the body erroring
 * included — the multipart upload is aborted before this rejects, and every buffer is returned.
 */
export async function uploadStream(
  target: MultipartTarget,
  body: Readable,
  settings: MultipartSettings,
): Promise<void> {
  const { client, bucket, key, contentType } = target;
  const { partSize, queueSize, pool, journal } = settings;
  let uploadId: string | null = null;
  const parts: { PartNumber: number; ETag: string }[] = [];
  const inFlight = new Set<Promise<void>>();
  let failure: unknown = null;
  let buffer: Buffer | null = null;
  let filled = 0;
  let partNumber = 0;

  const sendPart = (part: Buffer, length: number) => {
    const number = ++partNumber;
    const sending = (async () => {
      try {
        uploadId ??= await createUpload();
        const out = await client.send(
          new UploadPartCommand({
            Bucket: bucket,
            Key: key,
            UploadId: uploadId,
            PartNumber: number,
            Body: part.subarray(0, length),
            ContentLength: length,
          }),
        );
        if (!out.ETag) throw new Error(`part ${number} came back without an ETag`);
        await journal.partStored(await journalled.id!, number, length, out.ETag);
        parts.push({ PartNumber: number, ETag: out.ETag });
      } catch (error) {
        failure ??= error;
      } finally {
        pool.release(part);
      }
    })();
    inFlight.add(sending);
    void sending.then(() => inFlight.delete(sending));
  };
  const created: { upload: Promise<string> | null } = { upload: null };
  const journalled: { id: Promise<string> | null } = { id: null };
  const createUpload = () =>
    (created.upload ??= client
      .send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ContentType: contentType }))
      .then(async (out) => {
        if (!out.UploadId) throw new Error('S3 answered CreateMultipartUpload without an UploadId');
        journalled.id = journal.opened(key, out.UploadId);
        await journalled.id;
        return out.UploadId;
      }));

  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      let offset = 0;
      while (offset < chunk.length) {
        if (failure) throw failure;
        if (!buffer) {
          buffer = await pool.acquire(partSize);
          filled = 0;
        }
        const copied = chunk.copy(buffer, filled, offset);
        filled += copied;
        offset += copied;
        if (filled === partSize) {
          while (inFlight.size >= queueSize) await Promise.race(inFlight);
          if (failure) throw failure;
          sendPart(buffer, filled);
          buffer = null;
        }
      }
    }
    if (partNumber === 0) {
      // Smaller than a part: one PUT, no multipart upload.
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          ContentType: contentType,
          Body: buffer ? buffer.subarray(0, filled) : Buffer.alloc(0),
          ContentLength: filled,
        }),
      );
      return;
    }
    if (buffer && filled > 0) sendPart(buffer, filled);
    else if (buffer) pool.release(buffer);
    buffer = null;
    await Promise.all(inFlight);
    if (failure) throw failure;
    parts.sort((a, b) => a.PartNumber - b.PartNumber);
    await client.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: key,
        UploadId: uploadId!,
        MultipartUpload: { Parts: parts },
      }),
    );
    // A row left behind (Postgres away for a moment) is removed by the sweep, whose abort finds nothing.
    await journal.closed(uploadId!).catch(() => undefined);
  } catch (error) {
    await Promise.allSettled(inFlight);
    const id = uploadId ?? (await created.upload?.catch(() => null));
    if (id) await abortRecorded({ client, bucket, key }, id, journal);
    throw error;
  } finally {
    if (buffer) pool.release(buffer);
  }
}

/** Aborts one multipart upload and drops its journal row; an upload S3 no longer knows counts as aborted. */
export async function abortRecorded(
  target: Pick<MultipartTarget, 'client' | 'bucket' | 'key'>,
  uploadId: string,
  journal: MultipartJournal,
): Promise<void> {
  try {
    await target.client.send(
      new AbortMultipartUploadCommand({ Bucket: target.bucket, Key: target.key, UploadId: uploadId }),
    );
  } catch (error) {
    if ((error as { name?: string }).name !== 'NoSuchUpload') return;
  }
  await journal.closed(uploadId).catch(() => undefined);
}

/** S3's smallest part, except the last one of an upload. */
export const S3_MIN_PART_BYTES = 5 * 1024 * 1024;
/** S3's largest part (and largest single copy source of UploadPartCopy). */
export const S3_MAX_PART_BYTES = 5 * 1024 * 1024 * 1024;
export const S3_MAX_PARTS = 10_000;

/** Whether objects of these sizes can be joined by part copies alone: every one but the last ≥ 5 MiB. */
export function canComposeByCopy(sizes: number[]): boolean {
  if (sizes.length === 0 || sizes.length > S3_MAX_PARTS) return false;
  return sizes.every(
    (size, index) => size <= S3_MAX_PART_BYTES && (index === sizes.length - 1 || size >= S3_MIN_PART_BYTES),
  );
}

/**
 * Makes `target.key` the concatenation of `sources` without their bytes leaving S3: one multipart
 * upload whose parts are copies of the sources (UploadPartCopy), `parallel` at once, each recorded in
 * the journal. The caller checked the sizes with canComposeByCopy. On failure the upload is aborted.
 */
export async function composeByCopy(
  target: MultipartTarget,
  sources: { key: string; bytes: number }[],
  settings: { parallel: number; journal: MultipartJournal },
): Promise<void> {
  const { client, bucket, key, contentType } = target;
  const created = await client.send(
    new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ContentType: contentType }),
  );
  const uploadId = created.UploadId;
  if (!uploadId) throw new Error('S3 answered CreateMultipartUpload without an UploadId');
  try {
    const id = await settings.journal.opened(key, uploadId);
    const parts: { PartNumber: number; ETag: string }[] = new Array(sources.length);
    let next = 0;
    const copyNext = async (): Promise<void> => {
      while (next < sources.length) {
        const index = next++;
        const out = await client.send(
          new UploadPartCopyCommand({
            Bucket: bucket,
            Key: key,
            UploadId: uploadId,
            PartNumber: index + 1,
            CopySource: `${bucket}/${sources[index].key}`,
          }),
        );
        const etag = out.CopyPartResult?.ETag;
        if (!etag) throw new Error(`part copy ${index + 1} came back without an ETag`);
        await settings.journal.partStored(id, index + 1, sources[index].bytes, etag);
        parts[index] = { PartNumber: index + 1, ETag: etag };
      }
    };
    await Promise.all(Array.from({ length: Math.min(settings.parallel, sources.length) }, copyNext));
    await client.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: key,
        UploadId: uploadId,
        MultipartUpload: { Parts: parts },
      }),
    );
    await settings.journal.closed(uploadId).catch(() => undefined);
  } catch (error) {
    await abortRecorded(target, uploadId, settings.journal);
    throw error;
  }
}
