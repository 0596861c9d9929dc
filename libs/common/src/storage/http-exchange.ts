import type { ClientRequest, IncomingMessage } from 'node:http';
import type { ObjectRead } from './object-store';

// HTTP details both clients of object bytes share: the storage service's, and S3's through signed URLs.

/** An HTTP answer carrying object bytes (200, or 206 for a range) as an ObjectRead; null for any other status. */
export function objectReadOf(res: IncomingMessage): ObjectRead | null {
  const status = res.statusCode;
  if (status !== 200 && status !== 206) return null;
  return {
    status,
    body: res,
    contentLength: Number(res.headers['content-length'] ?? -1),
    contentRange: res.headers['content-range'],
  };
}

/**
 * A kept-alive socket that the server closed just as this request went out on it: the request never reached
 * a handler, so one that is safe to repeat is sent again on a fresh socket (as Node's docs advise).
 */
export function closedWhileIdle(req: ClientRequest, error: Error): boolean {
  return req.reusedSocket && (error as NodeJS.ErrnoException).code === 'ECONNRESET';
}
