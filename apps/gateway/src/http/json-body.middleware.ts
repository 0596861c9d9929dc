import { Inject, Injectable, type NestMiddleware } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import { ApiError, APP_CONFIG, ClientGoneError, setDrainLimits, type GatewayConfig } from '@app/common';
import { effectiveLimitsOf } from '../limits/effective-limits';

const isJson = (type: string | undefined) => /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(type ?? '');
const isMultipart = (type: string | undefined) => /^multipart\/form-data\s*(?:;|$)/i.test(type ?? '');
const charsetOf = (type: string | undefined) =>
  /;\s*charset\s*=\s*"?([\w.:-]+)"?/i.exec(type ?? '')?.[1]?.toLowerCase();

/**
 * Reads the body up to `limit` bytes. Past it, rejects at once and stops listening without consuming
 * or destroying the stream: the error filter answers 413 first, then drains the rest within its budget.
 * (body-parser instead reads the whole body before it answers, which a client writing gigabytes would wait for.)
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const detach = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        detach();
        req.pause();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      detach();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      detach();
      reject(error);
    };
    const onClose = () => {
      if (req.complete) return;
      detach();
      reject(new ClientGoneError('client disconnected while sending a JSON body'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

const tooLarge = (limit: number) =>
  new ApiError(
    'request_too_large',
    `The JSON body is larger than max_request_bytes (${limit}; see GET /v1/limits). ` +
      'Upload large files with POST /v1/files and send their file_id.',
  );

/**
 * Parses JSON bodies up to max_request_bytes, decided from Content-Length before a byte is read when it
 * is declared, else by counting. Multipart bodies are left to the streaming upload path; any other
 * non-empty body is 415. Errors are thrown so the global filter answers them in the contract's shape.
 */
@Injectable()
export class JsonBodyMiddleware implements NestMiddleware {
  private readonly limit: number;

  constructor(@Inject(APP_CONFIG) private readonly config: GatewayConfig) {
    this.limit = effectiveLimitsOf(config).maxRequestBytes;
  }

  async use(req: IncomingMessage & { body?: unknown }, _res: unknown, next: () => void): Promise<void> {
    const type = req.headers['content-type'];
    const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (!hasBody || isMultipart(type) || req.method === 'GET' || req.method === 'HEAD') return next();
    setDrainLimits(req, { maxBytes: 2 * this.limit, timeoutMs: this.config.UHP_DRAIN_TIMEOUT_MS });
    if (!isJson(type))
      throw new ApiError('unsupported_media_type', 'Send a JSON body with Content-Type: application/json.');
    const charset = charsetOf(type);
    if (charset && charset !== 'utf-8' && charset !== 'utf8')
      throw new ApiError('unsupported_media_type', 'JSON bodies must be UTF-8.');
    const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
    if (encoding !== 'identity')
      throw new ApiError(
        'unsupported_media_type',
        `Content-Encoding ${encoding} is not accepted; send the JSON uncompressed.`,
      );
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > this.limit) throw tooLarge(this.limit);
    const raw = await readBody(req, this.limit);
    // Before parsing: V8 parses any depth and any count, and a body of millions of (nested) arrays would
    // hold the event loop for seconds.
    const shape = jsonShapeOf(raw);
    if (shape === 'too_deep') throw tooDeep();
    if (shape === 'too_many_values') throw tooManyValues();
    try {
      req.body = raw.length === 0 ? undefined : JSON.parse(raw.toString('utf8').replace(/^\uFEFF/, ''));
    } catch {
      throw new ApiError('invalid_json', 'The request body is not valid JSON.');
    }
    refuseUnsafeJson(req.body);
    next();
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * How deeply arrays and objects may nest in a body. No route reads past about six levels; V8's parser
 * accepts any depth, but JSON.stringify, zod, Prisma's Json columns and the logger all recurse, so a body
 * nested deeper than the stack would be a 500 wherever it went next.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Arrays and objects one body may hold, and values (array elements, object members) in all. Parsing costs
 * about half a microsecond per array or object: these bound what one request can make the parser spend,
 * far above any body the API reads (an input of many messages, 300,000 part ids).
 */
export const MAX_JSON_CONTAINERS = 100_000;
export const MAX_JSON_VALUES = 1_000_000;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACKET = 0x5b;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACKET = 0x5d;
const CLOSE_BRACE = 0x7d;

/**
 * What the JSON text `raw` would make the parser build, read byte by byte outside strings (UTF-8
 * continuation bytes never equal these ASCII ones): 'too_deep' past MAX_JSON_DEPTH levels, 'too_many_values'
 * past MAX_JSON_CONTAINERS arrays and objects or MAX_JSON_VALUES commas; else null. Malformed text is left
 * to the parser.
 */
export function jsonShapeOf(raw: Buffer): 'too_deep' | 'too_many_values' | null {
  let depth = 0;
  let containers = 0;
  let commas = 0;
  let inString = false;
  for (let i = 0; i < raw.length; i++) {
    if (inString) {
      // Strings (a base64 inline file: most of a large body) are skipped at indexOf's speed. A quote ends
      // the string unless an odd run of backslashes stands right before it.
      const quote = raw.indexOf(QUOTE, i);
      if (quote < 0) return null;
      let backslashes = 0;
      while (quote - backslashes - 1 >= i && raw[quote - backslashes - 1] === BACKSLASH) backslashes++;
      inString = backslashes % 2 === 1;
      i = quote;
      continue;
    }
    const byte = raw[i];
    if (byte === QUOTE) inString = true;
    else if (byte === COMMA) {
      if (++commas >= MAX_JSON_VALUES) return 'too_many_values';
    } else if (byte === OPEN_BRACKET || byte === OPEN_BRACE) {
      if (++depth > MAX_JSON_DEPTH) return 'too_deep';
      if (++containers > MAX_JSON_CONTAINERS) return 'too_many_values';
    } else if (byte === CLOSE_BRACKET || byte === CLOSE_BRACE) depth--;
  }
  return null;
}

/**
 * Throws `400 invalid_json` for a parsed body that is nested deeper than MAX_JSON_DEPTH or holds a lone
 * surrogate escape (`"\udfff"`: JavaScript keeps half a UTF-16 pair, Postgres refuses it, a 500 the fuzzer
 * found in session metadata and container names). One walk with its own stack, never recursion or
 * `push(...items)`: either would overflow on a body shaped to do so, and bodies may be megabytes.
 */
export function refuseUnsafeJson(body: unknown): void {
  const containers: object[] = [];
  const depths: number[] = [];
  const visit = (value: unknown, depth: number) => {
    if (typeof value === 'string') {
      if (LONE_SURROGATE.test(value)) throw loneSurrogate();
    } else if (value !== null && typeof value === 'object') {
      if (depth > MAX_JSON_DEPTH) throw tooDeep();
      containers.push(value);
      depths.push(depth);
    }
  };
  visit(body, 1);
  while (containers.length > 0) {
    const container = containers.pop()!;
    const inner = depths.pop()! + 1;
    if (Array.isArray(container)) for (let i = 0; i < container.length; i++) visit(container[i], inner);
    else
      for (const key of Object.keys(container)) {
        if (LONE_SURROGATE.test(key)) throw loneSurrogate();
        visit((container as Record<string, unknown>)[key], inner);
      }
  }
}

const loneSurrogate = () =>
  new ApiError('invalid_json', 'The body holds a lone surrogate escape (such as \\udfff): that is not Unicode text.');

const tooManyValues = () =>
  new ApiError(
    'request_too_large',
    `The JSON body holds more than ${MAX_JSON_CONTAINERS} arrays and objects, or ${MAX_JSON_VALUES} values.`,
  );

const tooDeep = () =>
  new ApiError('invalid_json', `The body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`);
