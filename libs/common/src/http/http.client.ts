import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
// undici rather than node:http: keep-alive pools, connect/headers/body timeouts and AbortSignal are options of
// one dispatcher, and a Readable body streams with back-pressure, so no request/response plumbing is ours.
// (Node's global fetch is undici too, but offers none of its pool or timeout settings.)
import { Agent, type Dispatcher } from 'undici';

/**
 * The one timeout policy of outgoing object traffic. There is no total limit: a healthy multi-gigabyte
 * transfer on a slow link is never cut, only one that stops moving.
 */
export interface HttpClientTimeouts {
  /** To open the connection (TCP, and TLS for https). */
  connectMs: number;
  /**
   * From the request's last byte to the answer's head; while a body is being sent, also how long the peer
   * may stop reading it. A call whose server works before answering passes its own (`headersTimeoutMs`).
   */
  headersMs: number;
  /** No byte of the answer's body for this long (a reader that stopped reading does not count). */
  idleMs: number;
}

export const DEFAULT_HTTP_CLIENT_TIMEOUTS: HttpClientTimeouts = {
  connectMs: 10_000,
  headersMs: 30_000,
  idleMs: 60_000,
};

export interface HttpCall {
  method: 'GET' | 'PUT' | 'POST' | 'DELETE';
  url: URL;
  headers?: Record<string, string>;
  body?: Buffer | Readable;
  /**
   * Safe to send again: the call is retried when the exchange was lost before any answer. A streamed body
   * is never retried, whatever this says: its bytes are gone once sent.
   */
  idempotent?: boolean;
  /** Replaces the headers limit for a call the server answers only after its work (hashing, joining parts). */
  headersTimeoutMs?: number;
  /** Aborting it aborts the exchange, the answer's body included; the call rejects with its reason. */
  signal?: AbortSignal;
}

export type HttpAnswer = Dispatcher.ResponseData;

/** Waits before the second and third attempts: a restarting peer or a kept-alive socket closed as we sent. */
const RETRY_DELAYS_MS = [100, 400];

/**
 * Failures where no answer came and none was being waited for: the connection was refused, reset or closed
 * under the request. A timeout is not among them (a full limit was already spent on a stalled peer), nor a
 * refusal (an answer is the peer's decision), nor an abort.
 */
const LOST_EXCHANGE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'EAI_AGAIN', 'UND_ERR_SOCKET']);

const wasLost = (error: unknown) => LOST_EXCHANGE_CODES.has((error as NodeJS.ErrnoException)?.code ?? '');

/**
 * One HTTP client for object traffic (the storage service's API, S3 through signed URLs): a kept-alive pool
 * per origin, one timeout policy, one retry policy for idempotent calls, aborts passed through.
 */
export class HttpClient {
  /**
   * No cap on connections per origin (undici's default): a shared cap is a choke point one tenant's stalled
   * transfers can fill for every other tenant. Each connection serves one transfer, bounded per principal.
   */
  private readonly agent: Agent;

  constructor(timeouts: Partial<HttpClientTimeouts> = {}) {
    const { connectMs, headersMs, idleMs } = { ...DEFAULT_HTTP_CLIENT_TIMEOUTS, ...timeouts };
    this.agent = new Agent({ connect: { timeout: connectMs }, headersTimeout: headersMs, bodyTimeout: idleMs });
  }

  /** Sends the call; resolves with the answer's head and streaming body, whatever its status. */
  async send(call: HttpCall): Promise<HttpAnswer> {
    const retryDelays = call.idempotent && !(call.body instanceof Readable) ? RETRY_DELAYS_MS : [];
    for (let attempt = 0; ; attempt++) {
      try {
        const answer = await this.agent.request({
          origin: call.url.origin,
          path: `${call.url.pathname}${call.url.search}`,
          method: call.method,
          headers: call.headers,
          body: call.body,
          signal: call.signal,
          ...(call.headersTimeoutMs !== undefined ? { headersTimeout: call.headersTimeoutMs } : {}),
        });
        // A body its reader abandons (destroys unread) errors with an abort; with no listener left (a pipeline
        // that already gave up) that would take the process down. Readers still see every error.
        answer.body.on('error', () => undefined);
        return answer;
      } catch (error) {
        if (attempt >= retryDelays.length || call.signal?.aborted || !wasLost(error)) throw error;
        await sleep(retryDelays[attempt], undefined, { signal: call.signal });
      }
    }
  }

  close(): void {
    this.agent.destroy().catch(() => undefined);
  }
}

/** The first `max` characters of an answer's body; whatever arrived when the body fails part-way. */
export async function readText(body: Readable, max = 64 * 1024): Promise<{ text: string; isComplete: boolean }> {
  let text = '';
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      if (text.length < max) text += chunk.toString('utf8');
    }
    return { text, isComplete: true };
  } catch {
    return { text, isComplete: false };
  }
}
