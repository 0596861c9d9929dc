import { Inject, Injectable } from '@nestjs/common';
import busboy from 'busboy';
import { type Readable, Transform } from 'node:stream';
import {
  ApiError,
  APP_CONFIG,
  ClientGoneError,
  LOGGER,
  type AppLogger,
  type GatewayConfig,
  type PutOptions,
} from '@app/common';
import { ObjectStager, type HashedStagedObject } from '@app/lifecycle';
import type { UploadBody } from '../../http/upload-body';
import { effectiveLimitsOf } from '../../limits/effective-limits';
import { resolveContentType } from './content-type';
import { acceptFilename } from './filename';

export interface ReceivedUpload {
  /** The file part's bytes, staged: the caller's unit of work adopts them or they are discarded. */
  staged: HashedStagedObject;
  filename: string;
  contentType: string;
  fields: Map<string, string>;
}

/** Where the file part's bytes go, and how to undo that when the rest of the request fails. */
export interface ReceiveSink<T> {
  write(stream: Readable, put: PutOptions): Promise<T>;
  discard(stored: T): Promise<void>;
}

export interface Received<T> {
  stored: T;
  filename: string;
  contentType: string;
  fields: Map<string, string>;
}

/** Checks one form field as it arrives; throws an ApiError to reject the upload at once. */
export type FieldCheck = (name: string, value: string) => void;

export interface ReceiveOptions {
  /** The part that carries the bytes: `file` (files, container files) or `data` (an upload's part). */
  fileField: string;
  maxBytes: number;
  /** False for bytes whose own name means nothing (an upload's part): no filename is required. */
  isNamed: boolean;
  /**
   * Tighter bounds on everything but the file part (an upload's part has nothing else): with them, a
   * request's Content-Length bounds the file part's size from below too.
   */
  strictEnvelope?: boolean;
  /**
   * The file part's stream ends only once the whole request has been read and found well-formed (its
   * bytes flow as they arrive): a sink that commits on the end (an upload's block) never commits a
   * request that fails after its bytes.
   */
  endsWithRequest?: boolean;
}

/** `stream` as it flows, but ending only once `done` resolves (and failing if it rejects). */
function endingWith(stream: Readable, done: Promise<void>): Readable {
  const gate = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      callback(null, chunk);
    },
    flush(callback) {
      done.then(() => callback(), callback);
    },
  });
  stream.on('error', (error) => gate.destroy(error));
  return stream.pipe(gate);
}

/** With `strictEnvelope`, everything in a request but the file part's bytes stays under this. */
export const STRICT_ENVELOPE_BYTES = 1024 * 1024;

const malformed = () => new ApiError('invalid_multipart', 'The multipart body is malformed or incomplete.');

/**
 * Receives a `multipart/form-data` upload: the `file` part streams straight into a staged object (no
 * temp file, no whole-file buffer) while the other fields are read, in any order. Any failure — a bad
 * field, a second file part, malformed multipart, the byte cap, a client that hangs up, storage
 * failing — cancels the staging, which leaves nothing behind.
 */
@Injectable()
export class UploadReceiver {
  constructor(
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(ObjectStager) private readonly stager: ObjectStager,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  async receive(
    body: UploadBody,
    principalId: string,
    checkField: FieldCheck,
    options: ReceiveOptions = {
      fileField: 'file',
      maxBytes: effectiveLimitsOf(this.config).maxSingleRequestFileBytes,
      isNamed: true,
    },
  ): Promise<ReceivedUpload> {
    const { stored, ...rest } = await this.receiveInto(body, checkField, options, {
      write: (stream, put) => this.stager.stage(principalId, stream, put),
      discard: (staged) => this.stager.discard([staged]),
    });
    return { staged: stored, ...rest };
  }

  /** As `receive`, with the file part's bytes going to `sink` (an upload's block, say) instead of a staged object. */
  async receiveInto<T>(
    body: UploadBody,
    checkField: FieldCheck,
    options: ReceiveOptions,
    sink: ReceiveSink<T>,
  ): Promise<Received<T>> {
    const { fileField } = options;
    if (!/^multipart\/form-data\s*(?:;|$)/i.test(body.headers['content-type'] ?? '')) {
      throw new ApiError(
        'unsupported_media_type',
        `Upload with Content-Type: multipart/form-data and a part named "${fileField}".`,
      );
    }
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: body.headers,
        defParamCharset: 'utf8',
        preservePath: true,
        limits: options.strictEnvelope
          ? { fields: 8, fieldSize: 1024, parts: 9, headerPairs: 16 }
          : { fields: 100, fieldSize: 64 * 1024, parts: 200, headerPairs: 100 },
      });
    } catch {
      throw new ApiError('invalid_multipart', 'The body must be multipart/form-data with a boundary.');
    }

    const fields = new Map<string, string>();
    const cancel = new AbortController();
    let failure: unknown = null;
    let pending: Promise<Omit<Received<T>, 'fields'>> | null = null;
    let requestRead!: () => void;
    let requestFailed!: (error: unknown) => void;
    const wholeRequest = new Promise<void>((resolve, reject) => {
      requestRead = resolve;
      requestFailed = reject;
    });
    wholeRequest.catch(() => undefined);

    const settled = new Promise<void>((resolve, reject) => {
      const fail = (error: unknown) => {
        if (failure) return;
        failure = error;
        requestFailed(error);
        cancel.abort(error);
        body.stream.unpipe(parser);
        reject(error);
      };
      const stage = async (stream: Readable, info: busboy.FileInfo) => {
        const filename = options.isNamed ? acceptFilename(info.filename) : fileField;
        const contentType = options.isNamed ? resolveContentType(info.mimeType, filename) : 'application/octet-stream';
        const body = options.endsWithRequest ? endingWith(stream, wholeRequest) : stream;
        const stored = await sink.write(body, { maxBytes: options.maxBytes, contentType, signal: cancel.signal });
        return { stored, filename, contentType };
      };

      parser.on('file', (name, stream, info) => {
        // A form that ends early fails its file stream too; that must reach us, not crash the process.
        stream.on('error', () => fail(malformed()));
        if (failure || name !== fileField) {
          stream.resume();
          return;
        }
        if (pending) {
          stream.resume();
          return fail(new ApiError('invalid_multipart', 'The body holds more than one file part.', fileField));
        }
        pending = stage(stream, info);
        pending.catch(fail);
      });
      parser.on('field', (name, value, info) => {
        if (failure) return;
        // Busboy hands a part whose filename is empty (or absent) over as a field: it is the file part, unnamed.
        if (name === 'file')
          return fail(new ApiError('invalid_filename', 'The file part has an empty filename.', 'file'));
        if (info.valueTruncated) return fail(new ApiError('invalid_multipart', `The field ${name} is too long.`, name));
        try {
          checkField(name, value);
          fields.set(name, value);
        } catch (error) {
          fail(error);
        }
      });
      const tooMany = () => fail(new ApiError('invalid_multipart', 'The body holds too many parts.'));
      parser.on('partsLimit', tooMany);
      parser.on('fieldsLimit', tooMany);
      parser.on('error', () => fail(malformed()));
      parser.on('close', () => {
        if (failure) return;
        if (!pending)
          return fail(new ApiError('missing_file', `The body has no file part named "${fileField}".`, fileField));
        requestRead();
        pending.then(() => resolve(), fail);
      });
      body.stream.on('close', () => {
        if (!body.isComplete()) fail(new ClientGoneError('client disconnected mid-upload'));
      });
      body.stream.pipe(parser);
    });

    try {
      await settled;
      return { ...(await pending!), fields };
    } catch (error) {
      // A staged object that completed before the failure is discarded here; one that did not, by the stager.
      const done = await (pending as Promise<Omit<Received<T>, 'fields'>> | null)?.catch(() => null);
      if (done) await sink.discard(done.stored);
      if (error instanceof ClientGoneError) this.logger.info('client disconnected mid-upload; upload discarded');
      throw error;
    }
  }
}
