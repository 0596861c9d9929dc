import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import type { PartBufferPool } from './part-buffer-pool';

export interface MultipartTarget {
  client: S3Client;
  bucket: string;
  key: string;
  contentType: string;
}

export interface MultipartSettings {
  partSize: number;
  /** Parts of this upload in flight at once. */
  queueSize: number;
  pool: PartBufferPool;
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
  const { partSize, queueSize, pool } = settings;
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
  const createUpload = () =>
    (created.upload ??= client
      .send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ContentType: contentType }))
      .then((out) => {
        if (!out.UploadId) throw new Error('S3 answered CreateMultipartUpload without an UploadId');
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
  } catch (error) {
    await Promise.allSettled(inFlight);
    const id = uploadId ?? (await created.upload?.catch(() => null));
    if (id)
      await client
        .send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: id }))
        .catch(() => undefined);
    throw error;
  } finally {
    if (buffer) pool.release(buffer);
  }
}
