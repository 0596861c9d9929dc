import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';

/**
 * What the HTTP parser refuses before any route sees the request (a malformed request line, header or
 * chunked encoding; headers past Node's size limit) is answered with the contract's error body and an
 * X-Request-Id, where Node would write a bare `400 Bad Request` with no body. A client that is gone, or a
 * connection that already carries an answer, is closed as Node would close it.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  // As Node decides: an answer may go only where no response of this connection has begun.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (
    error.code === 'ECONNRESET' ||
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ||
    !socket.writable ||
    inFlight?.headersSent
  ) {
    socket.destroy();
    return;
  }
  const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
  const message = tooLarge
    ? 'The request headers are too large.'
    : 'The request is not valid HTTP/1.1 (its request line, headers or chunked encoding).';
  const body = JSON.stringify({
    error: { type: 'invalid_request_error', code: 'invalid_request', message, param: null },
  });
  const head = [
    'HTTP/1.1 400 Bad Request',
    'content-type: application/json; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    'cache-control: no-store',
    `x-request-id: ${randomUUID()}`,
    'connection: close',
  ].join('\r\n');
  socket.end(`${head}\r\n\r\n${body}`, () => socket.destroy());
}
