import type { HttpAnswer } from '../http/http.client';
import type { ObjectRead } from './object-store';

// HTTP details both clients of object bytes share: the storage service's, and S3's through signed URLs.

/** An HTTP answer carrying object bytes (200, or 206 for a range) as an ObjectRead; null for any other status. */
export function objectReadOf(answer: HttpAnswer): ObjectRead | null {
  const status = answer.statusCode;
  if (status !== 200 && status !== 206) return null;
  const contentRange = answer.headers['content-range'];
  return {
    status,
    body: answer.body,
    contentLength: Number(answer.headers['content-length'] ?? -1),
    contentRange: typeof contentRange === 'string' ? contentRange : undefined,
  };
}
