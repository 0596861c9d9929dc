import type { IncomingMessage } from 'node:http';

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

/**
 * After an early answer (413, 400 …) keep reading and discarding what the client still sends, within
 * a budget, so clients that write the whole body before reading (Node's fetch, the OpenAI SDK) get
 * the answer instead of a broken pipe (docs/api.md §1). Past the budget the connection is closed.
 */
export function drainRequest(req: IncomingMessage, fallback: DrainLimits): void {
  if (req.complete || req.destroyed || draining.has(req)) return;
  draining.add(req);
  const { maxBytes, timeoutMs } = drainLimits.get(req) ?? fallback;
  let seen = 0;
  const stop = () => {
    clearTimeout(timer);
    req.off('data', count);
    req.socket?.destroy();
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
