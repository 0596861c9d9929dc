import {
  AbortMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  PutObjectCommand,
  ListMultipartUploadsCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { Readable } from 'node:stream';
import { CircuitBreaker, staticS3CredentialsOf, type StorageConfig } from '@app/common';
import type { ComposeSource } from '@app/contracts';
import {
  abortRecorded,
  type BlockPlacement,
  canComposeByCopy,
  completeBlocks,
  composeByCopy,
  type MultipartJournal,
  uploadBlock,
  uploadStream,
} from './multipart-upload';
import { PartBufferPool } from './part-buffer-pool';
import { lastPartOf } from './last-part';

/**
 * The connections to S3, for an `http` and an `https` endpoint alike: kept alive, and at most S3_MAX_SOCKETS of
 * them (each download and each part in flight holds one).
 */
export function s3AgentsOf(config: Pick<StorageConfig, 'S3_MAX_SOCKETS'>): {
  httpAgent: HttpAgent;
  httpsAgent: HttpsAgent;
} {
  const options = { keepAlive: true, maxSockets: config.S3_MAX_SOCKETS };
  return { httpAgent: new HttpAgent(options), httpsAgent: new HttpsAgent(options) };
}

export interface ObjectRead {
  body: Readable;
  contentLength: number;
  contentRange?: string;
}

export class RangeNotSatisfiableError extends Error {}
export class ObjectMissingError extends Error {}

/** All S3 I/O of uhp-files. This process is the only holder of the S3 credentials. */
export class S3ObjectClient {
  private readonly s3: S3Client;
  /**
   * Whether S3 answers: a request that waited S3_REQUEST_TIMEOUT_MS in silence, or found nobody listening, marks
   * it down, and every request is refused before it is sent (503) until HeadBucket answers again.
   */
  readonly breaker: CircuitBreaker;
  /** The part buffers all uploads of this process share (STORAGE_MEMORY_BUDGET_BYTES). */
  readonly partBuffers: PartBufferPool;
  readonly bucket: string;

  constructor(
    private readonly config: StorageConfig,
    /** Every multipart upload this client opens is recorded here (Postgres) until it is completed or aborted. */
    readonly journal: MultipartJournal,
  ) {
    this.bucket = config.S3_BUCKET;
    this.partBuffers = new PartBufferPool(config.STORAGE_MEMORY_BUDGET_BYTES);
    this.s3 = new S3Client({
      endpoint: config.S3_ENDPOINT,
      region: config.S3_REGION,
      forcePathStyle: config.S3_FORCE_PATH_STYLE,
      // Absent: the SDK's default chain (IRSA, EKS Pod Identity, instance roles).
      credentials: staticS3CredentialsOf(config),
      // Checksums on every part would cost a second pass over each byte; we hash once ourselves.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: {
        ...s3AgentsOf(config),
        // An idle bound, not a total one: silence before the answer or between two bytes either way.
        connectionTimeout: config.S3_REQUEST_TIMEOUT_MS,
        socketTimeout: config.S3_REQUEST_TIMEOUT_MS,
      },
    });
    this.breaker = new CircuitBreaker({
      dependency: 's3',
      probe: async (signal) => {
        await this.s3.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal: signal });
      },
      probeTimeoutMs: config.S3_REQUEST_TIMEOUT_MS,
    });
    // Inside the SDK's retries, so each attempt is gated: once one attempt has timed out, the next is refused at
    // once rather than spend another whole bound. The refusal is not an error the SDK retries.
    this.s3.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'HeadBucketCommand') return next(args);
        return this.breaker.run(() => next(args));
      },
      { step: 'finalizeRequest', name: 'uhpCircuitBreaker', priority: 'low' },
    );
    // Bodies we send are hashed once by us (SHA-256 of the whole object) on their way in; SigV4's own
    // payload hash would be a second pass over every byte here and a third in the S3 server.
    this.s3.middlewareStack.add(
      (next, context) => async (args) => {
        const request = args.request as { headers?: Record<string, string> };
        if (
          request.headers &&
          (context.commandName === 'UploadPartCommand' || context.commandName === 'PutObjectCommand')
        )
          request.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
        return next(args);
      },
      { step: 'build', name: 'uhpUnsignedPayload' },
    );
  }

  /** Parts are sized so `maxBytes` fits in S3's 10,000 parts. */
  partSizeFor(maxBytes: number): number {
    return Math.max(this.config.S3_PART_SIZE_BYTES, Math.ceil(maxBytes / 10_000));
  }

  /**
   * Streams `body` into `key`: a multipart upload through the shared part buffers (see uploadStream),
   * or one PUT when it is smaller than a part. Rejects, with nothing left on S3, when the body errors
   * or S3 fails.
   */
  upload(key: string, body: Readable, maxBytes: number, contentType?: string): Promise<void> {
    return uploadStream(
      { client: this.s3, bucket: this.bucket, key, contentType: contentType ?? 'application/octet-stream' },
      body,
      {
        partSize: this.partSizeFor(maxBytes),
        queueSize: this.config.S3_UPLOAD_QUEUE_SIZE,
        pool: this.partBuffers,
        journal: this.journal,
      },
    );
  }

  /** The size of an object; ObjectMissingError when there is none. */
  async size(key: string): Promise<number> {
    try {
      const out = await this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return Number(out.ContentLength ?? 0);
    } catch (error) {
      if (error instanceof S3ServiceException && (error.name === 'NotFound' || error.$metadata.httpStatusCode === 404))
        throw new ObjectMissingError(key);
      throw error;
    }
  }

  /**
   * Makes `key` the concatenation of `sources` (whole objects or byte ranges of them), on the S3 side:
   * by part copies when every source but the last is at least 5 MiB (no byte travels), else by
   * streaming the sources one after the other through this process into a multipart upload (memory
   * bounded by the part buffers). Returns the size.
   */
  async compose(
    key: string,
    sources: ComposeSource[],
    contentType?: string,
  ): Promise<{ bytes: number; byCopy: boolean }> {
    const pieces = await Promise.all(
      sources.map(async (source) =>
        typeof source === 'string'
          ? { key: source, range: undefined, bytes: await this.size(source) }
          : { key: source.key, range: `bytes=${source.start}-${source.end}`, bytes: source.end - source.start + 1 },
      ),
    );
    const bytes = pieces.reduce((sum, piece) => sum + piece.bytes, 0);
    const target = {
      client: this.s3,
      bucket: this.bucket,
      key,
      contentType: contentType ?? 'application/octet-stream',
    };
    // An empty last source adds nothing, and a copy of zero bytes is not a part S3 takes everywhere.
    const parts = pieces.filter((piece) => piece.bytes > 0);
    if (parts.length === 0) {
      await this.s3.send(
        new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: Buffer.alloc(0), ContentLength: 0 }),
      );
      return { bytes, byCopy: false };
    }
    if (canComposeByCopy(parts.map((part) => part.bytes))) {
      await composeByCopy(target, parts, { parallel: this.config.S3_UPLOAD_QUEUE_SIZE * 2, journal: this.journal });
      return { bytes, byCopy: true };
    }
    const read = (part: (typeof parts)[number]) => this.read(part.key, part.range).then((object) => object.body);
    const concatenated = Readable.from(
      (async function* () {
        for (const part of parts) yield* (await read(part)) as AsyncIterable<Buffer>;
      })(),
    );
    await uploadStream(target, concatenated, {
      partSize: this.partSizeFor(bytes),
      queueSize: this.config.S3_UPLOAD_QUEUE_SIZE,
      pool: this.partBuffers,
      journal: this.journal,
    });
    return { bytes, byCopy: false };
  }

  /** Opens a multipart upload at `key` that stays open across requests (a resumable upload's), journalled. */
  async openMultipart(key: string, contentType?: string): Promise<string> {
    const out = await this.s3.send(
      new CreateMultipartUploadCommand({
        Bucket: this.bucket,
        Key: key,
        ContentType: contentType ?? 'application/octet-stream',
      }),
    );
    if (!out.UploadId) throw new Error('S3 answered CreateMultipartUpload without an UploadId');
    await this.journal.opened(key, out.UploadId);
    return out.UploadId;
  }

  /** Streams one block of an open multipart upload (see uploadBlock); returns its size. */
  writeBlock(
    key: string,
    uploadId: string,
    journalId: string,
    block: number,
    body: Readable,
    maxBytes: number,
  ): Promise<number> {
    return uploadBlock({ client: this.s3, bucket: this.bucket, key, uploadId, journalId }, block, body, {
      pool: this.partBuffers,
      journal: this.journal,
      maxBytes,
    });
  }

  /** Completes an open multipart upload from its blocks (see completeBlocks): where each block landed, and the size. */
  async completeBlocks(
    key: string,
    uploadId: string,
    journalId: string,
    blocks: number[] | 'all',
    lastSource: string | null,
  ): Promise<{ placements: BlockPlacement[]; bytes: number }> {
    const last = lastSource ? { key: lastSource, bytes: await this.size(lastSource) } : null;
    return completeBlocks(
      { client: this.s3, bucket: this.bucket, key, uploadId, journalId },
      blocks,
      last,
      this.journal,
    );
  }

  /** Aborts one multipart upload and drops its journal row. */
  abortUpload(key: string, uploadId: string): Promise<void> {
    return abortRecorded({ client: this.s3, bucket: this.bucket, key }, uploadId, this.journal);
  }

  /** A URL that reads `key` (a Range header may be added) for `seconds`, signed with this process's credentials. */
  readUrl(key: string, seconds: number): Promise<string> {
    return getSignedUrl(this.s3, new GetObjectCommand({ Bucket: this.bucket, Key: key }), { expiresIn: seconds });
  }

  async read(key: string, range?: string): Promise<ObjectRead> {
    try {
      const out = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: range }));
      return {
        body: out.Body as Readable,
        contentLength: Number(out.ContentLength ?? 0),
        contentRange: out.ContentRange,
      };
    } catch (error) {
      if (error instanceof S3ServiceException && (error.name === 'NoSuchKey' || error.$metadata.httpStatusCode === 404))
        throw new ObjectMissingError(key);
      if (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 416)
        throw new RangeNotSatisfiableError(range);
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  /**
   * Aborts unfinished multipart uploads under `prefix` started before `before` (all when omitted) —
   * except those `isLive` says are still receiving bytes.
   */
  async abortUploads(
    prefix: string,
    before?: Date,
    isLive?: (upload: { key: string; uploadId: string }) => Promise<boolean>,
  ): Promise<number> {
    let aborted = 0;
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      const page = await this.s3.send(
        new ListMultipartUploadsCommand({
          Bucket: this.bucket,
          Prefix: prefix,
          KeyMarker: keyMarker,
          UploadIdMarker: uploadIdMarker,
        }),
      );
      for (const upload of page.Uploads ?? []) {
        if (before && upload.Initiated && upload.Initiated >= before) continue;
        if (isLive && (await isLive({ key: upload.Key!, uploadId: upload.UploadId! }))) continue;
        await this.s3.send(
          new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: upload.Key, UploadId: upload.UploadId }),
        );
        await this.journal.closed(upload.UploadId!).catch(() => undefined);
        aborted++;
      }
      if (!page.IsTruncated) return aborted;
      keyMarker = page.NextKeyMarker;
      uploadIdMarker = page.NextUploadIdMarker;
    }
  }

  /** When the newest part of an unfinished multipart upload arrived; null when it has none yet. */
  lastPartAt(key: string, uploadId: string): Promise<Date | null> {
    return lastPartOf(this.s3, this.bucket, key, uploadId);
  }

  async ping(): Promise<void> {
    await this.s3.send(new HeadBucketCommand({ Bucket: this.bucket }));
  }

  destroy(): void {
    this.breaker.close();
    this.s3.destroy();
  }
}
