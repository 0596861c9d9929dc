import { PassThrough, type Readable } from 'node:stream';
import {
  type CompletedBlocksReceipt,
  type ComposedObjectReceipt,
  composePath,
  type ComposeSource,
  type HashedObjectReceipt,
  hashPath,
  multipartPath,
  type ObjectReadUrl,
  objectsPath,
  readUrlPath,
  STORAGE_HEADER,
  type StoredObjectReceipt,
} from '@app/contracts';
import { ApiError } from '../errors/api-error';
import { type HttpAnswer, type HttpCall, HttpClient, type HttpClientTimeouts, readText } from '../http/http.client';
import { currentRequestId, REQUEST_ID_HEADER } from '../logging/request-context';
import { objectReadOf } from './http-exchange';
import { type ByteRange, type ObjectRead, ObjectStore, type PutOptions } from './object-store';
import type { PresignedUrlReader } from './presigned-url-reader';

export interface StorageClientOptions {
  baseUrl: string;
  token: string;
  /**
   * Reads go straight to S3 through URLs the storage service signs (one Node hop for the bytes); without
   * it they are relayed by the storage service (for callers that may reach only the storage service).
   */
  directReads?: PresignedUrlReader;
  timeouts?: Partial<HttpClientTimeouts>;
}

/**
 * How long the storage service may work before it answers a call that finishes something on the S3 side
 * (the last step of an upload, a compose, a hash): reading or joining gigabytes, which S3 may take minutes over.
 */
const STORAGE_WORK_HEADERS_TIMEOUT_MS = 15 * 60_000;

const unavailable = () => new ApiError('service_unavailable', 'Object storage is unavailable; try again.');

/** The one error mapping of the storage service's answers: its status and error code to ours. */
function storageError(status: number, text: string): ApiError {
  let code: string | undefined;
  try {
    code = JSON.parse(text)?.error?.code;
  } catch {
    code = undefined;
  }
  if (status === 413 || code === 'file_too_large')
    return new ApiError('file_too_large', 'The file is larger than max_file_bytes (see GET /v1/limits).', 'file');
  if (status === 404) return ApiError.notFound('object');
  if (status === 409) return new ApiError('upload_conflict', 'The blocks named cannot be joined as they are.');
  // The one refusal a client causes on the block path: a part request whose envelope held most of its length.
  if (status === 400 && code === 'invalid_multipart')
    return new ApiError(
      'invalid_multipart',
      'A part request this long must carry at least 5 MiB in `data`; it held too much besides.',
      'data',
    );
  return unavailable();
}

/**
 * A JSON answer of the storage service: the document on 200, else the error its status and body name. A
 * refusal decides even when its body is cut short (the storage service drops a connection whose unwanted
 * upload keeps coming, which may reset the socket before the answer's body is read).
 */
async function jsonAnswer<T>(answer: HttpAnswer): Promise<T> {
  const { text, isComplete } = await readText(answer.body);
  if (answer.statusCode !== 200) throw storageError(answer.statusCode, text);
  if (!isComplete) throw unavailable();
  try {
    return JSON.parse(text) as T;
  } catch {
    throw unavailable();
  }
}

/**
 * The object store as the gateway and the worker reach it: a client of the storage service's internal
 * API. Streams both ways; nothing is buffered whole. Every call goes through one HttpClient.
 */
export class StorageClient extends ObjectStore {
  private readonly http: HttpClient;
  private readonly base: URL;

  constructor(private readonly options: StorageClientOptions) {
    super();
    this.base = new URL(options.baseUrl);
    this.http = new HttpClient(options.timeouts);
  }

  /** Whether reads go straight to S3 (through signed URLs) rather than through the storage service. */
  get readsDirectly(): boolean {
    return this.options.directReads !== undefined;
  }

  /** Sends one call to the storage service; a lost exchange (after the retries idempotent calls get) is unavailable. */
  private async send(call: Omit<HttpCall, 'url'> & { path: string }): Promise<HttpAnswer> {
    const requestId = currentRequestId();
    const { path, ...rest } = call;
    try {
      return await this.http.send({
        ...rest,
        url: new URL(path, this.base),
        headers: {
          authorization: `Bearer ${this.options.token}`,
          ...(requestId ? { [REQUEST_ID_HEADER]: requestId } : {}),
          ...call.headers,
        },
      });
    } catch (error) {
      if (call.signal?.aborted) throw call.signal.reason ?? error;
      throw unavailable();
    }
  }

  /**
   * Streams `body` into the object `key`. Resolves with the byte count and SHA-256 the storage service
   * measured; rejects with file_too_large past `maxBytes` (the storage service has aborted the upload
   * by then), or with service_unavailable. Aborting `signal` cancels the upload on the storage side.
   */
  put(key: string, body: Readable, opts: PutOptions): Promise<StoredObjectReceipt> {
    return this.upload(objectsPath(key), body, opts);
  }

  /** Streams one part into a block of an open multipart upload (see ObjectStore.putBlock). */
  putBlock(
    key: string,
    uploadId: string,
    block: number,
    body: Readable,
    opts: PutOptions,
  ): Promise<StoredObjectReceipt> {
    return this.upload(`${multipartPath(key, uploadId)}/blocks/${block}`, body, opts);
  }

  private async upload(path: string, body: Readable, opts: PutOptions): Promise<StoredObjectReceipt> {
    if (opts.signal?.aborted) throw opts.signal.reason ?? new Error('upload cancelled');
    // The caller's stream is relayed, not handed over: the HTTP client destroys the body it sends when the
    // exchange ends early, and what is left of the caller's stream stays the caller's (an early refusal
    // leaves it unread, to be drained or answered).
    const relay = new PassThrough();
    // The relay fails only with the caller's stream or the exchange, and each of those rejects this call; once
    // the exchange is over nobody else listens, and an 'error' with no listener would end the process.
    relay.on('error', () => undefined);
    let onBodyError!: (error: Error) => void;
    const bodyFailed = new Promise<never>((_, reject) => {
      onBodyError = (error) => {
        relay.destroy(error);
        reject(error);
      };
    });
    // Kept for the stream's life: a caller may fail its stream after this call settled (a build stopped
    // mid-write), and with no listener that error would end the process.
    body.on('error', onBodyError);
    body.pipe(relay);
    try {
      const answer = await Promise.race([
        this.send({
          method: 'PUT',
          path,
          body: relay,
          signal: opts.signal,
          headersTimeoutMs: STORAGE_WORK_HEADERS_TIMEOUT_MS,
          headers: {
            'content-type': 'application/octet-stream',
            [STORAGE_HEADER.maxBytes]: String(opts.maxBytes),
            ...(opts.contentType ? { [STORAGE_HEADER.contentType]: opts.contentType } : {}),
          },
        }),
        bodyFailed,
      ]);
      // An early answer (a refusal) arrives while we still write: stop sending.
      if (answer.statusCode !== 200) body.unpipe(relay);
      return await Promise.race([jsonAnswer<StoredObjectReceipt>(answer), bodyFailed]);
    } catch (error) {
      throw opts.signal?.aborted ? (opts.signal.reason ?? error) : error;
    } finally {
      body.unpipe(relay);
    }
  }

  /** Opens the object (or one byte range of it) as a stream. */
  async get(key: string, range?: ByteRange): Promise<ObjectRead> {
    const reader = this.options.directReads;
    if (!reader) return this.open(key, range);
    const { url } = await this.fetchJson<ObjectReadUrl>(readUrlPath(key));
    return reader.read(url, range);
  }

  private async fetchJson<T>(path: string): Promise<T> {
    return jsonAnswer<T>(await this.send({ method: 'GET', path, idempotent: true }));
  }

  private async open(key: string, range: ByteRange | undefined): Promise<ObjectRead> {
    const answer = await this.send({
      method: 'GET',
      path: objectsPath(key),
      idempotent: true,
      headers: range ? { range: `bytes=${range.start}-${range.end}` } : {},
    });
    const read = objectReadOf(answer);
    if (read) return read;
    throw storageError(answer.statusCode, (await readText(answer.body)).text);
  }

  /** Asks the storage service to compose `key` from `sources` (it may take a while: it hashes the result). */
  compose(key: string, sources: ComposeSource[], contentType?: string): Promise<ComposedObjectReceipt> {
    return this.post(composePath(key), { sources, contentType }, { isWork: true });
  }

  /** Asks the storage service to read the object once and measure it (a read: safe to send again). */
  hash(key: string, options: { md5?: boolean } = {}): Promise<HashedObjectReceipt> {
    return this.post(hashPath(key), { md5: options.md5 ?? true }, { isWork: true, idempotent: true });
  }

  async openMultipart(key: string, contentType: string): Promise<string> {
    const { uploadId } = await this.post<{ uploadId: string }>(
      multipartPath(key),
      {},
      { headers: { [STORAGE_HEADER.contentType]: contentType } },
    );
    return uploadId;
  }

  completeBlocks(
    key: string,
    uploadId: string,
    blocks: number[] | 'all',
    lastSource?: string,
  ): Promise<CompletedBlocksReceipt> {
    return this.post(multipartPath(key, uploadId, 'complete'), { blocks, lastSource }, { isWork: true });
  }

  async abortMultipart(key: string, uploadId: string): Promise<void> {
    const status = await this.simple('DELETE', multipartPath(key, uploadId));
    if (status !== 204 && status !== 200 && status !== 404)
      throw new ApiError('service_unavailable', `storage answered ${status} to an abort`);
  }

  /**
   * A JSON call. `isWork`: the storage service answers after its work on the S3 side, so the wait for the
   * answer gets the longer limit. `idempotent`: repeating it changes nothing, so a lost exchange is retried.
   */
  private async post<T>(
    path: string,
    json: unknown,
    call: { headers?: Record<string, string>; isWork?: boolean; idempotent?: boolean } = {},
  ): Promise<T> {
    const answer = await this.send({
      method: 'POST',
      path,
      body: Buffer.from(JSON.stringify(json)),
      headers: { 'content-type': 'application/json', ...call.headers },
      idempotent: call.idempotent,
      ...(call.isWork ? { headersTimeoutMs: STORAGE_WORK_HEADERS_TIMEOUT_MS } : {}),
    });
    return jsonAnswer<T>(answer);
  }

  /** Deletes the object; a missing object counts as deleted. */
  async delete(key: string): Promise<void> {
    const status = await this.simple('DELETE', objectsPath(key));
    if (status !== 204 && status !== 200 && status !== 404)
      throw new ApiError('service_unavailable', `storage answered ${status} to a delete`);
  }

  async ping(): Promise<void> {
    const status = await this.simple('GET', '/readyz');
    if (status !== 200) throw new Error(`storage service /readyz answered ${status}`);
  }

  /** An idempotent call whose status is all the answer says. */
  private async simple(method: 'GET' | 'DELETE', path: string): Promise<number> {
    const answer = await this.send({ method, path, idempotent: true });
    await answer.body.dump().catch(() => undefined);
    return answer.statusCode;
  }

  close(): void {
    this.http.close();
    this.options.directReads?.close();
  }
}
