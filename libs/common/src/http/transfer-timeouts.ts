import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';

/**
 * Idle limits for the two phases of an exchange where bytes move: the request body coming in, and a
 * response body streaming out. "Idle" is the socket's own inactivity timer: no byte moved in either
 * direction for `idleMs`, and the connection is closed — an upload is then aborted with nothing kept,
 * a download cut. Between the two phases (the server working: an agent run, a conversion wait) no timer
 * runs, and no total limit applies, so a healthy multi-gigabyte transfer on a slow link is never cut.
 */
export interface TransferTimeouts {
  idleMs: number;
  logger: Logger;
}

export const hasRequestBody = (req: IncomingMessage) =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

/** Watches the request body from now until its last byte. */
export function watchRequestBody(req: IncomingMessage, { idleMs, logger }: TransferTimeouts): void {
  if (!hasRequestBody(req) || req.complete) return;
  req.setTimeout(idleMs, () => {
    logger.warn(
      { idleMs, phase: req.complete ? 'response' : 'request body' },
      'no byte moved within the idle limit; connection closed',
    );
    req.socket.destroy();
  });
  req.once('end', () => req.socket?.setTimeout(0));
}

/** Watches a response body that streams, from now until it ends or the connection closes. */
export function watchResponseBody(res: ServerResponse, { idleMs, logger }: TransferTimeouts): void {
  res.setTimeout(idleMs, () => {
    logger.warn({ idleMs, phase: 'response body' }, 'no byte moved within the idle limit; connection closed');
    res.socket?.destroy();
  });
}
