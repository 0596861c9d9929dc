import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

export interface DrainLimits {
  maxBytes: number;
  timeoutMs: number;
}

const drainLimits = new WeakMap<IncomingMessage, DrainLimits>();
const draining = new WeakSet<IncomingMessage>();

/** Routes that accept large bodies raise the drain budget of their requests (2 × the body limit). */
export function setDrainLimits(req: IncomingMessage, limits: DrainLimits): void {
  drainLimits.set(req, limits);
}

/** How long a connection closed past its drain budget stays half-open before it is destroyed. */
const LINGER_MS = 2_000;

/**
 * After an early answer (413, 400 …) keep reading and discarding what the client still sends, within
 * a budget, so clients that write the whole body before reading (Node's fetch, the OpenAI SDK) get
 * the answer instead of a broken pipe (docs/api.md §1). Past the budget the connection is closed, lingering.
 */
export function drainRequest(req: IncomingMessage, fallback: DrainLimits): void {
  if (req.complete || req.destroyed || draining.has(req)) return;
  draining.add(req);
  const { maxBytes, timeoutMs } = drainLimits.get(req) ?? fallback;
  let seen = 0;
  const stop = () => {
    clearTimeout(timer);
    req.off('data', count);
    closeLingering(req.socket);
  };
  const count = (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > maxBytes) stop();
  };
  const timer = setTimeout(stop, timeoutMs);
  timer.unref();
  req.on('data', count);
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
  req.unpipe();
  req.resume();
}

/**
 * Closes a connection whose client is still sending: a FIN after the answer, reading paused, and only LINGER_MS
 * later the socket destroyed. Destroying it at once resets the connection while the client's bytes keep coming,
 * and a client that has not read the answer by then loses it (its kernel drops it on the reset).
 */
function closeLingering(socket: Socket | null): void {
  if (!socket || socket.destroyed) return;
  socket.end();
  socket.pause();
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}
