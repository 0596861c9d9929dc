import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
  UploadPartCopyCommand,
} from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import {
  blockOfPartNumber,
  firstPartNumberOf,
  MAX_UPLOAD_BLOCKS,
  MIN_BLOCK_BYTES,
  PART_NUMBERS_PER_BLOCK,
} from '@app/contracts';
import { partsOf } from './last-part';
import { ObjectTooLargeError } from './metering.transform';
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
    await completeRecorded({ client, bucket, key }, uploadId!, parts, journal);
  } catch (error) {
    await Promise.allSettled(inFlight);
    const id = uploadId ?? (await created.upload?.catch(() => null));
    if (id) await abortRecorded({ client, bucket, key }, id, journal);
    throw error;
  } finally {
    if (buffer) pool.release(buffer);
  }
}

/** Completes one multipart upload from `parts` (ascending) and drops its journal row. */
async function completeRecorded(
  target: Pick<MultipartTarget, 'client' | 'bucket' | 'key'>,
  uploadId: string,
  parts: { PartNumber: number; ETag: string }[],
  journal: MultipartJournal,
): Promise<void> {
  await target.client.send(
    new CompleteMultipartUploadCommand({
      Bucket: target.bucket,
      Key: target.key,
      UploadId: uploadId,
      MultipartUpload: { Parts: parts },
    }),
  );
  // A row left behind (Postgres away for a moment) is removed by the sweep, whose abort finds nothing.
  await journal.closed(uploadId).catch(() => undefined);
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
export const S3_MIN_PART_BYTES = MIN_BLOCK_BYTES;
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
  sources: { key: string; bytes: number; range?: string }[],
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
            CopySourceRange: sources[index].range,
          }),
        );
        const etag = out.CopyPartResult?.ETag;
        if (!etag) throw new Error(`part copy ${index + 1} came back without an ETag`);
        await settings.journal.partStored(id, index + 1, sources[index].bytes, etag);
        parts[index] = { PartNumber: index + 1, ETag: etag };
      }
    };
    await Promise.all(Array.from({ length: Math.min(settings.parallel, sources.length) }, copyNext));
    await completeRecorded({ client, bucket, key }, uploadId, parts, settings.journal);
  } catch (error) {
    await abortRecorded(target, uploadId, settings.journal);
    throw error;
  }
}

/** A block is held in buffers of this size until its body has ended (4 hold the 64 MiB largest part). */
export const BLOCK_BUFFER_BYTES = 16 * 1024 * 1024;
export const MAX_BLOCK_BYTES = PART_NUMBERS_PER_BLOCK * BLOCK_BUFFER_BYTES;
/** Blocks 0…MAX_BLOCKS-1; the part numbers after them stay free for one copied last part (see completeBlocks). */
export const MAX_BLOCKS = MAX_UPLOAD_BLOCKS;

/** A block must carry at least one S3 part's minimum: a smaller part of a resumable upload is an object of its own. */
export class BlockTooSmallError extends Error {}

/**
 * Writes `body` (one part of a resumable upload, at most `maxBytes`) as one S3 part, the first of
 * `block`'s part numbers, once the body has ended and not before: until then its bytes wait in buffers
 * borrowed from the pool, as many as `maxBytes` needs, granted together (writers never deadlock over the
 * budget). A part that is refused, malformed or cut off mid-way therefore sends nothing to S3, and an
 * UploadPart is atomic: S3 holds the block whole or not at all. The gateway ends `body` only after it
 * has read the whole request, so a request that fails after its bytes leaves nothing either. Resolves
 * with the bytes written; rejects with BlockTooSmallError (nothing sent) when the body is under 5 MiB.
 */
export async function uploadBlock(
  target: Omit<MultipartTarget, 'contentType'> & { uploadId: string; journalId: string },
  block: number,
  body: Readable,
  settings: { pool: PartBufferPool; journal: MultipartJournal; maxBytes: number },
): Promise<number> {
  const { client, bucket, key, uploadId, journalId } = target;
  const capacity = Math.max(S3_MIN_PART_BYTES, Math.min(settings.maxBytes, MAX_BLOCK_BYTES));
  const buffers = await settings.pool.acquireMany(BLOCK_BUFFER_BYTES, Math.ceil(capacity / BLOCK_BUFFER_BYTES));
  try {
    let index = 0;
    let filled = 0;
    let total = 0;
    for await (const chunk of body as AsyncIterable<Buffer>) {
      let offset = 0;
      while (offset < chunk.length) {
        if (filled === BLOCK_BUFFER_BYTES) {
          index++;
          filled = 0;
        }
        if (index === buffers.length) throw new ObjectTooLargeError(capacity);
        const copied = chunk.copy(buffers[index], filled, offset);
        filled += copied;
        offset += copied;
        total += copied;
      }
    }
    if (total < S3_MIN_PART_BYTES) throw new BlockTooSmallError(`a block of ${total} bytes`);
    const chunks = buffers.slice(0, index + 1).map((buffer, i) => (i === index ? buffer.subarray(0, filled) : buffer));
    const partNumber = firstPartNumberOf(block);
    const out = await client.send(
      new UploadPartCommand({
        Bucket: bucket,
        Key: key,
        UploadId: uploadId,
        PartNumber: partNumber,
        Body: chunks.length === 1 ? chunks[0] : Readable.from(chunks),
        ContentLength: total,
      }),
    );
    if (!out.ETag) throw new Error(`part ${partNumber} came back without an ETag`);
    await settings.journal.partStored(journalId, partNumber, total, out.ETag);
    return total;
  } finally {
    for (const buffer of buffers) settings.pool.release(buffer);
  }
}

/** The upload holds parts of blocks not named: S3 servers such as Ceph's cannot complete with a subset. */
export class BlocksNotJoinableError extends Error {}

export interface BlockPlacement {
  block: number;
  offset: number;
  bytes: number;
}

/**
 * Completes the multipart upload at `target.key` from the parts S3 lists for it. `blocks` 'exact' (an
 * ascending list): the object is exactly those blocks, then `lastSource` (a stored object, copied in as
 * the final part: a small last part of a resumable upload); BlocksNotJoinableError, with nothing
 * changed, when the upload holds any other part (some S3 servers refuse to complete with a subset of
 * the parts). `blocks` 'all': every part, in part-number order, whatever block it belongs to. Returns
 * where each block landed and the object's size. On failure the multipart upload is left as it was for
 * a retry or an abort.
 */
export async function completeBlocks(
  target: Omit<MultipartTarget, 'contentType'> & { uploadId: string; journalId: string },
  blocks: number[] | 'all',
  lastSource: { key: string; bytes: number } | null,
  journal: MultipartJournal,
): Promise<{ placements: BlockPlacement[]; bytes: number }> {
  const { client, bucket, key, uploadId, journalId } = target;
  const lastNumber = firstPartNumberOf(MAX_BLOCKS);
  const listed = (await partsOf(client, bucket, key, uploadId)).filter(
    // A last part copied by an earlier attempt is copied again now; without one now, it is a part not named.
    (part) => blocks === 'all' || !lastSource || part.PartNumber !== lastNumber,
  );
  if (blocks !== 'all') {
    if (blocks.some((block, index) => index > 0 && block <= blocks[index - 1]))
      throw new Error('blocks must be in ascending order');
    const named = new Set(blocks);
    if (listed.some((part) => !named.has(blockOfPartNumber(part.PartNumber!))))
      throw new BlocksNotJoinableError('the upload holds parts of blocks not named');
    const present = new Set(listed.map((part) => blockOfPartNumber(part.PartNumber!)));
    const missing = blocks.find((block) => !present.has(block));
    if (missing !== undefined) throw new Error(`block ${missing} has no parts`);
  }
  const placements: BlockPlacement[] = [];
  const parts: { PartNumber: number; ETag: string }[] = [];
  let offset = 0;
  for (const part of listed) {
    const block = blockOfPartNumber(part.PartNumber!);
    const bytes = Number(part.Size ?? 0);
    const current = placements[placements.length - 1];
    if (current?.block === block) current.bytes += bytes;
    else placements.push({ block, offset, bytes });
    offset += bytes;
    parts.push({ PartNumber: part.PartNumber!, ETag: part.ETag! });
  }
  if (lastSource && blocks !== 'all') {
    const out = await client.send(
      new UploadPartCopyCommand({
        Bucket: bucket,
        Key: key,
        UploadId: uploadId,
        PartNumber: lastNumber,
        CopySource: `${bucket}/${lastSource.key}`,
      }),
    );
    const etag = out.CopyPartResult?.ETag;
    if (!etag) throw new Error('the last part copy came back without an ETag');
    await journal.partStored(journalId, lastNumber, lastSource.bytes, etag);
    parts.push({ PartNumber: lastNumber, ETag: etag });
    offset += lastSource.bytes;
  }
  await completeRecorded({ client, bucket, key }, uploadId, parts, journal);
  return { placements, bytes: offset };
}
