import type { Readable } from 'node:stream';
import { ApiError } from '../errors/api-error';
import { CircuitBreaker } from '../health/circuit-breaker';
import { HttpClient, readText } from '../http/http.client';
import { objectReadOf } from './http-exchange';
import type { ByteRange, ObjectRead } from './object-store';

/** Why a read from S3 failed, for the log: never the URL itself, whose query is a bearer credential. */
export interface S3ReadFailure {
  host: string;
  path: string;
  /** S3's status, or undefined when no answer came (refused, reset, stalled). */
  status?: number;
  /** S3's error code (`AccessDenied`, `SlowDown` …) or the socket error's. */
  code?: string;
}

export interface PresignedUrlReaderOptions {
  /** No byte from S3 for this long, before or during the body: the read is cut (S3_REQUEST_TIMEOUT_MS). */
  idleTimeoutMs: number;
  onFailure?: (failure: S3ReadFailure) => void;
}

const unavailable = () => new ApiError('service_unavailable', 'Object storage is unavailable; try again.');

/** S3's error bodies are short XML documents whose `<Code>` names the error. */
async function s3ErrorCode(body: Readable): Promise<string | undefined> {
  const { text } = await readText(body, 8 * 1024);
  return /<Code>([^<]{1,64})<\/Code>/.exec(text)?.[1];
}

/** What the log says of a read that got no answer: a stalled S3 in plain words, else the socket error's code. */
function noAnswerCode(error: NodeJS.ErrnoException): string {
  if (error.code === 'UND_ERR_HEADERS_TIMEOUT' || error.code === 'UND_ERR_CONNECT_TIMEOUT') return 'S3 read stalled';
  return error.code ?? error.message;
}

/**
 * Reads objects straight from S3 through URLs the storage service signed: a download's bytes cross this
 * process only, where a relay through the storage service would cost a second Node hop (about as much CPU
 * again per byte). The URL carries no credential beyond one object's read for a few minutes.
 */
export class PresignedUrlReader {
  /**
   * The storage client's machinery: the idle limit covers the wait for the answer and every gap in its body,
   * so a stalled S3 (or a reader that stopped reading for as long, which the gateway's own response watch
   * cuts too) ends the read. Reads are GETs, retried when the exchange is lost before any answer.
   */
  private readonly http: HttpClient;

  /**
   * Whether S3 answers, as this process sees it: a read that waited its whole bound in silence, or found nobody
   * listening, marks S3 down, and reads are refused at once (503) until S3's endpoint answers anything again.
   */
  readonly breaker: CircuitBreaker;
  /** Where S3 was last read from: the endpoint a probe asks. */
  private origin: string | null = null;

  constructor(private readonly options: PresignedUrlReaderOptions) {
    const idleMs = options.idleTimeoutMs;
    this.http = new HttpClient({ connectMs: idleMs, headersMs: idleMs, idleMs });
    this.breaker = new CircuitBreaker({
      dependency: 's3',
      // Any answer will do (S3 refuses an unsigned GET of its root): it is there and answering.
      probe: async (signal) => {
        if (!this.origin) return;
        const answer = await this.http.send({ method: 'GET', url: new URL('/', this.origin), signal });
        await answer.body.dump().catch(() => undefined);
      },
      probeTimeoutMs: idleMs,
    });
  }

  /** Opens the object behind `url`, or one range of it; 404 is not_found, any other failure service_unavailable. */
  async read(url: string, range?: ByteRange): Promise<ObjectRead> {
    this.breaker.assertUp();
    const target = new URL(url);
    this.origin = target.origin;
    const failed = (failure: Omit<S3ReadFailure, 'host' | 'path'>) =>
      this.options.onFailure?.({ host: target.host, path: target.pathname, ...failure });
    const answer = await this.http
      .send({
        method: 'GET',
        url: target,
        idempotent: true,
        headers: range ? { range: `bytes=${range.start}-${range.end}` } : {},
      })
      .catch((error: NodeJS.ErrnoException) => {
        this.breaker.observe(error);
        failed({ code: noAnswerCode(error) });
        throw unavailable();
      });
    // Once S3 answered, a failure is the body's: whoever reads it sees the error (and logs it).
    const read = objectReadOf(answer);
    const expected = range ? range.end - range.start + 1 : undefined;
    // A store that ignored the Range, or answered another length, would put other bytes under the client's
    // Content-Length: refused before a byte is sent. (A 200 for a range that is the whole object is fine.)
    const sameBytes = read?.contentLength === expected && (read?.status === 206 || range?.start === 0);
    if (read && expected !== undefined && !sameBytes) {
      answer.body.destroy();
      failed({ status: read.status, code: `answered ${read.contentLength} bytes for a range of ${expected}` });
      throw unavailable();
    }
    if (read) return read;
    const status = answer.statusCode;
    const code = await s3ErrorCode(answer.body);
    if (status === 404) throw ApiError.notFound('object');
    failed({ status, code });
    throw unavailable();
  }

  close(): void {
    this.breaker.close();
    this.http.close();
  }
}
