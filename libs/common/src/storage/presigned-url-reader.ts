import { Agent as HttpAgent, type ClientRequest, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { ApiError } from '../errors/api-error';
import { closedWhileIdle, objectReadOf } from './http-exchange';
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
  /** No byte from S3 for this long, before or during the body: the read is cut. */
  idleTimeoutMs: number;
  onFailure?: (failure: S3ReadFailure) => void;
}

const unavailable = () => new ApiError('service_unavailable', 'Object storage is unavailable; try again.');

/** S3's error bodies are short XML documents whose `<Code>` names the error. */
async function s3ErrorCode(res: IncomingMessage): Promise<string | undefined> {
  let text = '';
  for await (const chunk of res as AsyncIterable<Buffer>) {
    if (text.length < 8 * 1024) text += chunk.toString('utf8');
  }
  return /<Code>([^<]{1,64})<\/Code>/.exec(text)?.[1];
}

/**
 * Reads objects straight from S3 through URLs the storage service signed: a download's bytes cross this
 * process only, where a relay through the storage service would cost a second Node hop (about as much CPU
 * again per byte). The URL carries no credential beyond one object's read for a few minutes.
 */
export class PresignedUrlReader {
  /** No cap on sockets, as with the storage service: each serves one transfer, bounded per principal. */
  private readonly httpAgent = new HttpAgent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 256 });
  private readonly httpsAgent = new HttpsAgent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 256 });

  constructor(private readonly options: PresignedUrlReaderOptions) {}

  /** Opens the object behind `url`, or one range of it; 404 is not_found, any other failure service_unavailable. */
  read(url: string, range?: ByteRange): Promise<ObjectRead> {
    return this.open(new URL(url), range, false);
  }

  private open(url: URL, range: ByteRange | undefined, retried: boolean): Promise<ObjectRead> {
    const failed = (failure: Omit<S3ReadFailure, 'host' | 'path'>) =>
      this.options.onFailure?.({ host: url.host, path: url.pathname, ...failure });
    return new Promise<ObjectRead>((resolve, reject) => {
      const secure = url.protocol === 'https:';
      const req: ClientRequest = (secure ? httpsRequest : httpRequest)(url, {
        method: 'GET',
        agent: secure ? this.httpsAgent : this.httpAgent,
        headers: range ? { range: `bytes=${range.start}-${range.end}` } : {},
      });
      // Covers the wait for the answer and every gap in its body: a stalled S3 (or a reader that stopped
      // reading for as long, which the gateway's own response watch cuts too) ends the read.
      req.setTimeout(this.options.idleTimeoutMs, () => req.destroy(new Error('S3 read stalled')));
      let answered = false;
      req.on('response', (res) => {
        answered = true;
        const read = objectReadOf(res);
        const expected = range ? range.end - range.start + 1 : undefined;
        // A store that ignored the Range, or answered another length, would put other bytes under the client's
        // Content-Length: refused before a byte is sent. (A 200 for a range that is the whole object is fine.)
        const sameBytes = read?.contentLength === expected && (read?.status === 206 || range?.start === 0);
        if (read && expected !== undefined && !sameBytes) {
          res.destroy();
          failed({ status: read.status, code: `answered ${read.contentLength} bytes for a range of ${expected}` });
          return reject(unavailable());
        }
        if (read) return resolve(read);
        const status = res.statusCode ?? 502;
        s3ErrorCode(res).then(
          (code) => {
            if (status === 404) return reject(ApiError.notFound('object'));
            failed({ status, code });
            reject(unavailable());
          },
          () => {
            failed({ status });
            reject(unavailable());
          },
        );
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        // Once S3 answered, a failure is the body's: whoever reads it sees the error (and logs it).
        if (answered) return;
        if (!retried && closedWhileIdle(req, error)) {
          resolve(this.open(url, range, true));
          return;
        }
        failed({ code: error.code ?? error.message });
        reject(unavailable());
      });
      req.end();
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
