import { Agent, type IncomingMessage, request } from 'node:http';
import type { Readable } from 'node:stream';
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
import { currentRequestId, REQUEST_ID_HEADER } from '../logging/request-context';
import { closedWhileIdle, objectReadOf } from './http-exchange';
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
}

async function readText(res: IncomingMessage, max = 64 * 1024): Promise<string> {
  let text = '';
  for await (const chunk of res) {
    if (text.length < max) text += chunk.toString('utf8');
  }
  return text;
}

const unavailable = () => new ApiError('service_unavailable', 'Object storage is unavailable; try again.');

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

/** A JSON answer of the storage service: the document on 200, else the error its status and body name. */
async function jsonAnswer<T>(res: IncomingMessage): Promise<T> {
  let text: string;
  try {
    text = await readText(res);
  } catch {
    throw unavailable();
  }
  if (res.statusCode !== 200) throw storageError(res.statusCode ?? 502, text);
  try {
    return JSON.parse(text) as T;
  } catch {
    throw unavailable();
  }
}

/**
 * The object store as the gateway and the worker reach it: a client of the storage service's internal
 * API. Streams both ways; nothing is buffered whole.
 */
export class StorageClient extends ObjectStore {
  /**
   * No cap on sockets: a shared cap is a choke point one tenant's stalled transfers can fill for every
   * other tenant. Each socket serves one client transfer, bounded per principal by the gateway's limits.
   */
  private readonly agent = new Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 256 });
  private readonly base: URL;

  constructor(private readonly options: StorageClientOptions) {
    super();
    this.base = new URL(options.baseUrl);
  }

  /** Whether reads go straight to S3 (through signed URLs) rather than through the storage service. */
  get readsDirectly(): boolean {
    return this.options.directReads !== undefined;
  }

  private headers(extra: Record<string, string | number> = {}): Record<string, string | number> {
    const requestId = currentRequestId();
    return {
      authorization: `Bearer ${this.options.token}`,
      ...(requestId ? { [REQUEST_ID_HEADER]: requestId } : {}),
      ...extra,
    };
  }

  private url(path: string): URL {
    return new URL(path, this.base);
  }

  /**
   * Streams `body` into the object `key`. Resolves with the byte count and SHA-256 the storage service
   * measured; rejects with file_too_large past `maxBytes` (the storage service has aborted the upload
   * by then), or with service_unavailable. Aborting `signal` cancels the upload on the storage side.
   */
  put(key: string, body: Readable, opts: PutOptions): Promise<StoredObjectReceipt> {
    return this.stream(objectsPath(key), body, opts);
  }

  /** Streams one part into a block of an open multipart upload (see ObjectStore.putBlock). */
  putBlock(
    key: string,
    uploadId: string,
    block: number,
    body: Readable,
    opts: PutOptions,
  ): Promise<StoredObjectReceipt> {
    return this.stream(`${multipartPath(key, uploadId)}/blocks/${block}`, body, opts);
  }

  private stream(path: string, body: Readable, opts: PutOptions): Promise<StoredObjectReceipt> {
    return new Promise<StoredObjectReceipt>((resolve, reject) => {
      let settled = false;
      const settle = (fn: () => void) => {
        if (settled) return;
        settled = true;
        opts.signal?.removeEventListener('abort', onAbort);
        fn();
      };
      /** A refusal (404, 413 …) seen while we were still sending: it decides, whatever happens to the socket next. */
      let refusal: { status: number; text: string } | null = null;
      const refused = () => storageError(refusal!.status, refusal!.text);
      const req = request(this.url(path), {
        method: 'PUT',
        agent: this.agent,
        headers: this.headers({
          'content-type': 'application/octet-stream',
          'transfer-encoding': 'chunked',
          [STORAGE_HEADER.maxBytes]: opts.maxBytes,
          ...(opts.contentType ? { [STORAGE_HEADER.contentType]: opts.contentType } : {}),
        }),
      });
      req.on('response', (res) => {
        const status = res.statusCode ?? 502;
        if (status === 200) {
          readText(res)
            .then((text) => settle(() => resolve(JSON.parse(text) as StoredObjectReceipt)))
            .catch(() => settle(() => reject(unavailable())));
          return;
        }
        // An early answer arrives while we still write: stop sending. The storage service drops a connection
        // whose unwanted body keeps coming, so the socket may be reset before the answer's body is read.
        body.unpipe(req);
        // Nor is the connection kept: the storage service may be closing it past its drain budget.
        req.shouldKeepAlive = false;
        const answer = { status, text: '' };
        refusal = answer;
        res.on('data', (chunk: Buffer) => {
          if (answer.text.length < 64 * 1024) answer.text += chunk.toString('utf8');
        });
        res.on('end', () => {
          req.destroy();
          settle(() => reject(refused()));
        });
        res.on('error', () => settle(() => reject(refused())));
        res.on('close', () => settle(() => reject(refused())));
      });
      req.on('error', () => settle(() => reject(refusal ? refused() : unavailable())));
      body.on('error', (error) => {
        req.destroy(error);
        settle(() => reject(error));
      });
      const onAbort = () => {
        req.destroy(new Error('upload cancelled'));
        settle(() => reject(opts.signal?.reason ?? new Error('upload cancelled')));
      };
      if (opts.signal?.aborted) return onAbort();
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      body.pipe(req);
    });
  }

  /** Opens the object (or one byte range of it) as a stream. */
  async get(key: string, range?: ByteRange): Promise<ObjectRead> {
    const reader = this.options.directReads;
    if (!reader) return this.open(key, range, false);
    const { url } = await this.fetchJson<ObjectReadUrl>(readUrlPath(key), false);
    return reader.read(url, range);
  }

  private fetchJson<T>(path: string, retried: boolean): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const req = request(this.url(path), { method: 'GET', agent: this.agent, headers: this.headers() });
      req.on('response', (res) => jsonAnswer<T>(res).then(resolve, reject));
      req.on('error', (error) => {
        if (!retried && closedWhileIdle(req, error)) resolve(this.fetchJson<T>(path, true));
        else reject(unavailable());
      });
      req.end();
    });
  }

  private open(key: string, range: ByteRange | undefined, retried: boolean): Promise<ObjectRead> {
    return new Promise<ObjectRead>((resolve, reject) => {
      const headers = this.headers(range ? { range: `bytes=${range.start}-${range.end}` } : {});
      const req = request(this.url(objectsPath(key)), { method: 'GET', agent: this.agent, headers });
      req.on('response', (res) => {
        const read = objectReadOf(res);
        if (read) return resolve(read);
        readText(res).then((text) => reject(storageError(res.statusCode ?? 502, text)), reject);
      });
      req.on('error', (error) => {
        if (!retried && closedWhileIdle(req, error)) resolve(this.open(key, range, true));
        else reject(unavailable());
      });
      req.end();
    });
  }

  /** Asks the storage service to compose `key` from `sources` (it may take a while: it hashes the result). */
  compose(key: string, sources: ComposeSource[], contentType?: string): Promise<ComposedObjectReceipt> {
    return this.post(composePath(key), { sources, contentType });
  }

  /** Asks the storage service to read the object once and measure it. */
  hash(key: string, options: { md5?: boolean } = {}): Promise<HashedObjectReceipt> {
    return this.post(hashPath(key), { md5: options.md5 ?? true });
  }

  async openMultipart(key: string, contentType: string): Promise<string> {
    const { uploadId } = await this.post<{ uploadId: string }>(
      multipartPath(key),
      {},
      {
        [STORAGE_HEADER.contentType]: contentType,
      },
    );
    return uploadId;
  }

  completeBlocks(
    key: string,
    uploadId: string,
    blocks: number[] | 'all',
    lastSource?: string,
  ): Promise<CompletedBlocksReceipt> {
    return this.post(multipartPath(key, uploadId, 'complete'), { blocks, lastSource });
  }

  async abortMultipart(key: string, uploadId: string): Promise<void> {
    const status = await this.simple('DELETE', multipartPath(key, uploadId));
    if (status !== 204 && status !== 200 && status !== 404)
      throw new ApiError('service_unavailable', `storage answered ${status} to an abort`);
  }

  private post<T>(path: string, json: unknown, extraHeaders: Record<string, string> = {}): Promise<T> {
    const body = Buffer.from(JSON.stringify(json));
    return new Promise<T>((resolve, reject) => {
      const req = request(this.url(path), {
        method: 'POST',
        agent: this.agent,
        headers: this.headers({ 'content-type': 'application/json', 'content-length': body.length, ...extraHeaders }),
      });
      req.on('response', (res) => jsonAnswer<T>(res).then(resolve, reject));
      req.on('error', () => reject(unavailable()));
      req.end(body);
    });
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

  private simple(method: string, path: string, retried = false): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const req = request(this.url(path), { method, agent: this.agent, headers: this.headers() });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 502));
        res.on('error', reject);
      });
      req.on('error', (error) => {
        if (!retried && closedWhileIdle(req, error)) resolve(this.simple(method, path, true));
        else reject(error);
      });
      req.end();
    });
  }

  close(): void {
    this.agent.destroy();
    this.options.directReads?.close();
  }
}
