import { type Readable, Transform } from 'node:stream';
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
import { CircuitBreaker } from '../health/circuit-breaker';
import { type HttpAnswer, type HttpCall, HttpClient, readText } from '../http/http.client';
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
  /** The idle limit of an answer's body (UHP_IDLE_TIMEOUT_MS; 60 s when not given). */
  idleMs?: number;
  /**
   * STORAGE_REQUEST_TIMEOUT_MS: to connect; and a call that goes this long without its answer's head, or
   * without the service reading what is sent, makes the client probe the service's /healthz (see `send`);
   * 30 s when not given.
   */
  requestTimeoutMs?: number;
}

/**
 * How long the storage service may work before it answers a call that finishes something on the S3 side
 * (the last step of an upload, a compose, a hash): reading or joining gigabytes, which S3 may take minutes over.
 */
const STORAGE_WORK_HEADERS_TIMEOUT_MS = 15 * 60_000;

/** Failures that say nobody answers at the storage service's address (its stalls are found by probing). */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

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
  /**
   * Whether the storage service answers. Its calls may rightly wait long (it waits on S3, which has its own
   * bound), so a slow call is not a verdict: a call stuck past STORAGE_REQUEST_TIMEOUT_MS has the client ask
   * /healthz, and only when that gets no answer in as long is the service marked down and every call in flight
   * ended with 503.
   */
  readonly breaker: CircuitBreaker;
  private readonly requestTimeoutMs: number;

  constructor(private readonly options: StorageClientOptions) {
    super();
    this.base = new URL(options.baseUrl);
    const { requestTimeoutMs = 30_000, idleMs = 60_000 } = options;
    this.requestTimeoutMs = requestTimeoutMs;
    // Simple calls may wait on one S3 request of the storage service's, plus the time to notice a stall.
    this.http = new HttpClient({ connectMs: requestTimeoutMs, headersMs: 2 * requestTimeoutMs, idleMs });
    this.breaker = new CircuitBreaker({
      dependency: 'storage',
      probe: async (signal) => {
        const answer = await this.http.send({ method: 'GET', url: new URL('/healthz', this.base), signal });
        await answer.body.dump().catch(() => undefined);
        if (answer.statusCode !== 200) throw new Error(`storage service /healthz answered ${answer.statusCode}`);
      },
      probeTimeoutMs: requestTimeoutMs,
    });
  }

  /** Whether reads go straight to S3 (through signed URLs) rather than through the storage service. */
  get readsDirectly(): boolean {
    return this.options.directReads !== undefined;
  }

  /** The reader of direct reads, when reads go straight to S3. */
  get directReads(): PresignedUrlReader | undefined {
    return this.options.directReads;
  }

  /**
   * Sends one call to the storage service; a lost exchange (after the retries idempotent calls get) is
   * unavailable. Refused at once while the service is marked down. Until the answer's head arrives, every
   * STORAGE_REQUEST_TIMEOUT_MS in which the call made no progress (`sent`: bytes of its body sent so far) has the
   * service probed; a failed probe marks it down, which ends this call and every other in flight.
   */
  private async send(call: Omit<HttpCall, 'url'> & { path: string; sent?: () => number }): Promise<HttpAnswer> {
    this.breaker.assertUp();
    const requestId = currentRequestId();
    const { path, sent, signal: callerSignal, ...rest } = call;
    const down = this.breaker.downSignal;
    let progress = sent?.() ?? 0;
    let lastProgressAt = Date.now();
    const watchdog = setInterval(
      () => {
        const now = sent?.() ?? 0;
        if (now !== progress) {
          progress = now;
          lastProgressAt = Date.now();
        } else if (Date.now() - lastProgressAt >= this.requestTimeoutMs) {
          lastProgressAt = Date.now();
          void this.breaker.probe();
        }
      },
      Math.max(100, this.requestTimeoutMs / 4),
    );
    watchdog.unref();
    try {
      return await this.http.send({
        ...rest,
        url: new URL(path, this.base),
        signal: callerSignal ? AbortSignal.any([callerSignal, down]) : down,
        headers: {
          authorization: `Bearer ${this.options.token}`,
          ...(requestId ? { [REQUEST_ID_HEADER]: requestId } : {}),
          ...call.headers,
        },
      });
    } catch (error) {
      if (callerSignal?.aborted) throw callerSignal.reason ?? error;
      if (UNREACHABLE_CODES.has((error as NodeJS.ErrnoException)?.code ?? '')) this.breaker.observe(error);
      throw unavailable();
    } finally {
      clearInterval(watchdog);
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
    let sent = 0;
    // Counts what the exchange takes: once the storage service stops reading, the relay's buffer fills and the
    // count stands still (see send's watchdog).
    const relay = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        sent += chunk.length;
        done(null, chunk);
      },
    });
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
          sent: () => sent,
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
    this.breaker.close();
    this.http.close();
    this.options.directReads?.close();
  }
}
