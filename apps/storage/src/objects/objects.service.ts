/* eslint-disable max-lines -- puts, composes, multipart blocks and deletes share the in-flight map that makes a
   delete wait for a put's cleanup; taking the multipart blocks into a class of their own is a change of its own. */
import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { Counter, type Registry } from 'prom-client';
import { ApiError, APP_CONFIG, LOGGER, METRICS_REGISTRY, type AppLogger, type StorageConfig } from '@app/common';
import {
  type CompletedBlocksReceipt,
  type ComposedObjectReceipt,
  type ComposeSource,
  type HashedObjectReceipt,
  type ObjectReadUrl,
  READ_URL_TTL_SECONDS,
  type StoredObjectReceipt,
} from '@app/contracts';
import { S3MultipartRepository } from '@app/db';
import { MeteringTransform, ObjectTooLargeError } from './metering.transform';
import { BlocksNotJoinableError, BlockTooSmallError, MAX_BLOCK_BYTES, MAX_BLOCKS } from './multipart-upload';
import { ObjectMissingError, type ObjectRead, RangeNotSatisfiableError, S3ObjectClient } from './s3-object.client';

/** Puts, reads and deletes objects; makes sure a failed put leaves nothing in the bucket. */
@Injectable()
export class ObjectsService implements OnModuleInit, OnModuleDestroy {
  private sweepTimer?: NodeJS.Timeout;
  /** Puts in flight by key: a delete waits for the put to finish its own cleanup first. */
  private readonly inFlight = new Map<string, Promise<unknown>>();
  /** Reads by the way their bytes go: relayed through this process, or straight from S3 by a signed URL. */
  private readonly reads: Counter<'way'>;

  constructor(
    @Inject(S3ObjectClient) private readonly s3: S3ObjectClient,
    @Inject(S3MultipartRepository) private readonly journal: S3MultipartRepository,
    @Inject(APP_CONFIG) private readonly config: StorageConfig,
    @Inject(LOGGER) private readonly logger: AppLogger,
    @Inject(METRICS_REGISTRY) registry: Registry,
  ) {
    this.reads = new Counter({
      name: 'uhp_storage_reads_total',
      help: 'Object reads opened: way="relayed" through this service, way="signed_url" straight from S3',
      labelNames: ['way'] as const,
      registers: [registry],
    });
  }

  onModuleInit(): void {
    if (this.config.STORAGE_SWEEP_INTERVAL_MS > 0) {
      const sweep = () => void this.abortAbandonedUploads();
      setImmediate(sweep);
      this.sweepTimer = setInterval(sweep, this.config.STORAGE_SWEEP_INTERVAL_MS);
      this.sweepTimer.unref();
    }
  }

  onModuleDestroy(): void {
    clearInterval(this.sweepTimer);
    this.s3.destroy();
  }

  put(key: string, body: Readable, maxBytes: number, contentType?: string): Promise<StoredObjectReceipt> {
    const done = this.putNow(key, body, maxBytes, contentType);
    const settled = done.catch(() => undefined).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, settled);
    return done;
  }

  private async putNow(
    key: string,
    body: Readable,
    maxBytes: number,
    contentType?: string,
  ): Promise<StoredObjectReceipt> {
    const cap = Math.min(maxBytes, Math.max(this.config.UHP_MAX_FILE_BYTES, this.config.ARCHIVE_MAX_BYTES));
    const meter = new MeteringTransform(cap);
    // Piped by hand, not with pipeline(): a failed upload must not destroy the request's socket, or the
    // caller would never read our answer.
    let firstFailure: 'input' | 'upload' | undefined;
    const input = new Promise<void>((resolve, reject) => {
      let failed = false;
      const fail = (error: unknown) => {
        if (failed) return;
        failed = true;
        firstFailure ??= 'input';
        reject(error);
        // Ends the upload's input with the error, so the upload aborts its multipart upload.
        body.unpipe(meter);
        if (!meter.destroyed) meter.destroy(error instanceof Error ? error : new Error(String(error)));
      };
      body.once('end', () => {
        if (!firstFailure) resolve();
      });
      body.once('error', fail);
      body.once('close', () => {
        if (!body.readableEnded) fail(new Error('the caller went away'));
      });
      meter.once('error', fail);
      body.pipe(meter);
    });
    const uploaded = this.s3.upload(key, meter, cap, contentType).catch((error: unknown) => {
      firstFailure ??= 'upload';
      throw error;
    });
    const [inputResult, uploadResult] = await Promise.allSettled([input, uploaded]);
    if (inputResult.status === 'fulfilled' && uploadResult.status === 'fulfilled') {
      return { key, bytes: meter.bytes, sha256: meter.digest() };
    }
    body.unpipe(meter);
    meter.destroy();
    // The upload aborts its multipart upload before it rejects; this also catches the window where
    // the input failed after the last part and the object was completed anyway.
    await this.removeLeftovers(key);
    const cause =
      firstFailure === 'upload' || inputResult.status === 'fulfilled'
        ? (uploadResult as PromiseRejectedResult).reason
        : inputResult.reason;
    if (cause instanceof ObjectTooLargeError) {
      this.logger.info({ key, maxBytes: cap }, 'upload over its byte cap aborted');
      throw new ApiError('file_too_large', `The object is larger than ${cap} bytes.`);
    }
    if (firstFailure === 'input') {
      this.logger.info({ key, bytes: meter.bytes }, 'upload cancelled by the caller; multipart upload aborted');
      throw new ApiError('invalid_request', 'The upload was cancelled.');
    }
    this.logger.error({ key, err: cause }, 'upload to S3 failed; multipart upload aborted');
    throw new ApiError('service_unavailable', 'Object storage failed; try again.');
  }

  /**
   * `key` becomes the concatenation of `sources` (see S3ObjectClient.compose), then is read back once to
   * measure its SHA-256 and MD5 — part copies never show us the bytes. On failure nothing is left at `key`.
   */
  compose(key: string, sources: ComposeSource[], contentType?: string): Promise<ComposedObjectReceipt> {
    const done = this.composeNow(key, sources, contentType);
    const settled = done.catch(() => undefined).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, settled);
    return done;
  }

  private async composeNow(
    key: string,
    sources: ComposeSource[],
    contentType?: string,
  ): Promise<ComposedObjectReceipt> {
    try {
      const started = Date.now();
      const { bytes, byCopy } = await this.s3.compose(key, sources, contentType);
      const composedMs = Date.now() - started;
      const { sha256, md5 } = await this.hashOf(key);
      this.logger.info(
        { key, parts: sources.length, bytes, byCopy, composedMs, hashedMs: Date.now() - started - composedMs },
        'object composed',
      );
      return { key, bytes, sha256, md5: md5! };
    } catch (error) {
      await this.removeLeftovers(key);
      if (error instanceof ObjectMissingError) throw ApiError.notFound('object');
      this.logger.error({ key, err: error }, 'compose failed');
      throw new ApiError('service_unavailable', 'Object storage failed; try again.');
    }
  }

  /** Reads the object once and measures it: size, SHA-256 and, when asked, MD5. */
  async hash(key: string, withMd5 = true): Promise<HashedObjectReceipt> {
    try {
      const started = Date.now();
      const { sha256, md5, bytes } = await this.hashOf(key, withMd5);
      this.logger.info({ key, bytes, hashedMs: Date.now() - started }, 'object hashed');
      return { key, bytes, sha256, md5 };
    } catch (error) {
      if (error instanceof ObjectMissingError) throw ApiError.notFound('object');
      this.logger.error({ key, err: error }, 'hash failed');
      throw new ApiError('service_unavailable', 'Object storage failed; try again.');
    }
  }

  /** Opens a multipart upload that stays open across requests (a resumable upload's). */
  async openMultipart(key: string, contentType?: string): Promise<string> {
    try {
      return await this.s3.openMultipart(key, contentType);
    } catch (error) {
      this.logger.error({ key, err: error }, 'could not open a multipart upload');
      throw new ApiError('service_unavailable', 'Object storage failed; try again.');
    }
  }

  /**
   * Streams one part of a resumable upload into `block` of its open multipart upload, capped at
   * `maxBytes` (at most 64 MiB) and hashed. 404 when the upload is no longer open; 400 invalid_multipart
   * when the part is under 5 MiB (the gateway sends those as objects of their own, so only a request
   * padded around a small part gets here).
   */
  async writeBlock(
    key: string,
    uploadId: string,
    block: number,
    body: Readable,
    maxBytes: number,
  ): Promise<StoredObjectReceipt> {
    if (!Number.isSafeInteger(block) || block < 0 || block >= MAX_BLOCKS) throw ApiError.invalid('no such block');
    const journalId = await this.journal.idOf(key, uploadId);
    if (!journalId) throw ApiError.notFound('multipart upload');
    const cap = Math.min(maxBytes, MAX_BLOCK_BYTES);
    const meter = new MeteringTransform(cap);
    let callerGone = false;
    const gone = (error?: Error) => {
      callerGone = true;
      meter.destroy(error ?? new Error('the caller went away'));
    };
    body.on('error', gone);
    body.on('close', () => {
      if (!body.readableEnded) gone();
    });
    body.pipe(meter);
    try {
      const bytes = await this.s3.writeBlock(key, uploadId, journalId, block, meter, cap);
      return { key, bytes, sha256: meter.digest() };
    } catch (error) {
      body.unpipe(meter);
      meter.destroy();
      if (error instanceof ObjectTooLargeError)
        throw new ApiError('file_too_large', `This block may hold at most ${cap} bytes.`);
      if (error instanceof BlockTooSmallError) throw new ApiError('invalid_multipart', 'A block is at least 5 MiB.');
      if (callerGone) {
        this.logger.info({ key, block, bytes: meter.bytes }, 'block cancelled by the caller');
        throw new ApiError('invalid_request', 'The upload was cancelled.');
      }
      this.logger.error({ key, block, err: error }, 'block upload to S3 failed');
      throw new ApiError('service_unavailable', 'Object storage failed; try again.');
    }
  }

  /**
   * Completes the open multipart upload at `key`: from exactly `blocks` (ascending) and an optional last
   * object, or from every part it holds ('all'). 409 upload_conflict when exact blocks cannot be joined
   * because the upload holds other parts too (a re-sent or failed part): the caller then takes 'all'.
   */
  async completeBlocks(
    key: string,
    uploadId: string,
    blocks: number[] | 'all',
    lastSource: string | null,
  ): Promise<CompletedBlocksReceipt> {
    const journalId = await this.journal.idOf(key, uploadId);
    if (!journalId) throw ApiError.notFound('multipart upload');
    try {
      const started = Date.now();
      const { placements, bytes } = await this.s3.completeBlocks(key, uploadId, journalId, blocks, lastSource);
      this.logger.info(
        { key, blocks: placements.length, exact: blocks !== 'all', bytes, completedMs: Date.now() - started },
        'blocks completed',
      );
      return { key, bytes, blocks: placements };
    } catch (error) {
      if (error instanceof BlocksNotJoinableError)
        throw new ApiError('upload_conflict', 'The upload holds parts besides the blocks named.');
      if (error instanceof ObjectMissingError) throw ApiError.notFound('object');
      this.logger.error({ key, uploadId, err: error }, 'completing blocks failed');
      throw new ApiError('service_unavailable', 'Object storage failed; try again.');
    }
  }

  async abortMultipart(key: string, uploadId: string): Promise<void> {
    try {
      await this.s3.abortUpload(key, uploadId);
    } catch (error) {
      this.logger.error({ key, err: error }, 'could not abort a multipart upload; the sweeper will retry');
      throw new ApiError('service_unavailable', 'Object storage failed; try again.');
    }
  }

  private async hashOf(key: string, withMd5 = true): Promise<{ sha256: string; md5: string | null; bytes: number }> {
    const sha256 = createHash('sha256');
    const md5 = withMd5 ? createHash('md5') : null;
    const object = await this.s3.read(key);
    let bytes = 0;
    for await (const chunk of object.body as AsyncIterable<Buffer>) {
      sha256.update(chunk);
      md5?.update(chunk);
      bytes += chunk.length;
    }
    return { sha256: sha256.digest('hex'), md5: md5?.digest('hex') ?? null, bytes };
  }

  private async removeLeftovers(key: string): Promise<void> {
    try {
      await this.s3.abortUploads(key);
      await this.s3.delete(key);
    } catch (error) {
      this.logger.error({ key, err: error }, 'could not remove what a failed upload left; the sweeper will retry');
    }
  }

  /** Opens the object, or `range` of it; 404 when it is missing, 416 when the range is outside it. */
  async read(key: string, range: string | undefined): Promise<ObjectRead> {
    this.reads.inc({ way: 'relayed' });
    try {
      return await this.s3.read(key, range);
    } catch (error) {
      if (error instanceof ObjectMissingError) throw ApiError.notFound('object');
      if (error instanceof RangeNotSatisfiableError)
        throw new ApiError('range_not_satisfiable', 'Range not satisfiable.');
      this.logger.error({ key, err: error }, 'S3 read failed');
      throw new ApiError('service_unavailable', 'Object storage failed; try again.');
    }
  }

  /** Signs a URL that reads the object straight from S3 (no S3 request is made here; a missing object is S3's 404). */
  async readUrl(key: string): Promise<ObjectReadUrl> {
    const expiresAt = new Date(Date.now() + READ_URL_TTL_SECONDS * 1000).toISOString();
    this.reads.inc({ way: 'signed_url' });
    try {
      return { url: await this.s3.readUrl(key, READ_URL_TTL_SECONDS), expiresAt };
    } catch (error) {
      // Signing is local; it fails only when the credential chain yields no credentials.
      this.logger.error({ key, err: error }, 'S3 read URL signing failed');
      throw new ApiError('service_unavailable', 'Object storage failed; try again.');
    }
  }

  async delete(key: string): Promise<void> {
    await this.inFlight.get(key);
    try {
      await this.s3.delete(key);
    } catch (error) {
      this.logger.error({ key, err: error }, 'S3 delete failed');
      throw new ApiError('service_unavailable', 'Object storage failed; try again.');
    }
  }

  /**
   * Multipart uploads nobody writes any more are aborted, judged from the journal in Postgres: no part
   * for STORAGE_ABANDONED_UPLOAD_SECONDS, or none for STORAGE_ORPHAN_UPLOAD_SECONDS while the stored
   * object of their key is gone (its upload failed or was discarded). Every part touches the row, so a
   * slow but live upload — on this replica or another — is never aborted, however long ago it started.
   * Uploads the journal does not know (opened outside this service, or in the instant before their row
   * was written) are judged by their newest part on S3.
   */
  async abortAbandonedUploads(): Promise<number> {
    try {
      const now = Date.now();
      const before = new Date(now - this.config.STORAGE_ABANDONED_UPLOAD_SECONDS * 1000);
      const ownerGoneBefore = new Date(now - this.config.STORAGE_ORPHAN_UPLOAD_SECONDS * 1000);
      let aborted = 0;
      for (const row of await this.journal.listAbandoned(before, ownerGoneBefore, 1000)) {
        if (this.inFlight.has(row.storageKey)) continue;
        await this.s3.abortUpload(row.storageKey, row.s3UploadId);
        aborted++;
      }
      const isLive = async ({ key, uploadId }: { key: string; uploadId: string }) => {
        if (this.inFlight.has(key) || (await this.journal.isKnown(uploadId))) return true;
        const lastPart = await this.s3.lastPartAt(key, uploadId);
        return lastPart !== null && lastPart >= before;
      };
      aborted += await this.s3.abortUploads('', before, isLive);
      if (aborted > 0) this.logger.warn({ aborted }, 'aborted abandoned multipart uploads');
      return aborted;
    } catch (error) {
      this.logger.warn({ err: error }, 'abandoned-upload sweep failed');
      return 0;
    }
  }
}
