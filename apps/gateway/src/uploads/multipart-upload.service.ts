import { Inject, Injectable } from '@nestjs/common';
import busboy from 'busboy';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { ApiError, APP_CONFIG, ClientGoneError, LOGGER, setDrainLimits, StorageClient, type AppLogger, type GatewayConfig } from '@app/common';
import type { StoredObjectReceipt } from '@app/contracts';
import { StoredObjectRepository, type StoredObjectRow } from '@app/db';
import { resolveContentType } from './content-type';
import { acceptFilename } from './filename';
import { ObjectKeeper } from './object-keeper.service';

/** Room for the multipart envelope when judging Content-Length against max_file_bytes (PROFILE §2). */
export const MULTIPART_ENVELOPE_BYTES = 64 * 1024;

export interface ReceivedUpload {
  object: StoredObjectRow;
  receipt: StoredObjectReceipt;
  filename: string;
  contentType: string;
  fields: Map<string, string>;
}

/** Checks one form field as it arrives; throws an ApiError to reject the upload at once. */
export type FieldCheck = (name: string, value: string) => void;


/**
 * Receives a `multipart/form-data` upload: the `file` part streams straight into the storage service
 * (no temp file, no whole-file buffer) while the other fields are read, in any order. Any failure —
 * a bad field, a second file part, malformed multipart, the byte cap, a client that hangs up, storage
 * failing — aborts the stored object, so a rejected upload leaves nothing behind.
 */
@Injectable()
export class MultipartUploadService {
  constructor(
    @Inject(APP_CONFIG) private readonly config: GatewayConfig,
    @Inject(StorageClient) private readonly storage: StorageClient,
    @Inject(StoredObjectRepository) private readonly objects: StoredObjectRepository,
    @Inject(ObjectKeeper) private readonly keeper: ObjectKeeper,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {}

  /** Rejects by Content-Length before a byte of the body is read. */
  checkDeclaredLength(req: IncomingMessage): void {
    const maxBytes = this.config.UHP_MAX_FILE_BYTES;
    setDrainLimits(req, { maxBytes: 2 * (maxBytes + MULTIPART_ENVELOPE_BYTES), timeoutMs: this.config.UHP_DRAIN_TIMEOUT_MS });
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes + MULTIPART_ENVELOPE_BYTES) {
      throw new ApiError('file_too_large', `The upload declares ${declared} bytes; max_file_bytes is ${maxBytes} (see GET /v1/limits).`, 'file');
    }
  }

  async receive(req: IncomingMessage, principalId: string, checkField: FieldCheck): Promise<ReceivedUpload> {
    this.checkDeclaredLength(req);
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        defParamCharset: 'utf8',
        preservePath: true,
        limits: { fields: 100, fieldSize: 64 * 1024, parts: 200, headerPairs: 100 },
      });
    } catch {
      throw new ApiError('invalid_multipart', 'The body must be multipart/form-data with a boundary.');
    }

    const fields = new Map<string, string>();
    const cancel = new AbortController();
    let failure: unknown = null;
    type Stored = { object: StoredObjectRow; receipt: StoredObjectReceipt; filename: string; contentType: string };
    const state: { pending: Promise<Stored> | null; object: StoredObjectRow | null } = { pending: null, object: null };

    const settled = new Promise<void>((resolve, reject) => {
      const fail = (error: unknown) => {
        if (failure) return;
        failure = error;
        cancel.abort(error);
        req.unpipe(parser);
        reject(error);
      };
      const startFile = (stream: Readable, info: busboy.FileInfo) => {
        const filename = acceptFilename(info.filename);
        const contentType = resolveContentType(info.mimeType, filename);
        return (async () => {
          const object = await this.objects.createUploading(principalId);
          state.object = object;
          const receipt = await this.storage.putObject(object.storageKey, stream, { maxBytes: this.config.UHP_MAX_FILE_BYTES, contentType, signal: cancel.signal });
          return { object, receipt, filename, contentType };
        })();
      };

      parser.on('file', (name, stream, info) => {
        // A form that ends early fails its file stream too; that must reach us, not crash the process.
        stream.on('error', () => fail(new ApiError('invalid_multipart', 'The multipart body is malformed or incomplete.')));
        if (failure || name !== 'file') {
          stream.resume();
          return;
        }
        if (state.pending) {
          stream.resume();
          return fail(new ApiError('invalid_multipart', 'The body holds more than one file part.', 'file'));
        }
        try {
          state.pending = startFile(stream, info);
          state.pending.catch(fail);
        } catch (error) {
          stream.resume();
          fail(error);
        }
      });
      parser.on('field', (name, value, info) => {
        if (failure) return;
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
      parser.on('error', () => fail(new ApiError('invalid_multipart', 'The multipart body is malformed or incomplete.')));
      parser.on('close', () => {
        if (failure) return;
        if (!state.pending) return fail(new ApiError('missing_file', 'The body has no file part named "file".', 'file'));
        state.pending.then(() => resolve(), fail);
      });
      req.on('close', () => {
        if (!req.complete) fail(new ClientGoneError('client disconnected mid-upload'));
      });
      req.pipe(parser);
    });

    try {
      await settled;
      const done = await state.pending!;
      return { ...done, fields };
    } catch (error) {
      await state.pending?.catch(() => undefined);
      if (state.object) await this.keeper.discard(state.object);
      if (error instanceof ClientGoneError) this.logger.info({ objectId: state.object?.id }, 'client disconnected mid-upload; upload discarded');
      throw error;
    }
  }
}
