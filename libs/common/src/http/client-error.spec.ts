import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerClientError } from './client-error';

let server: Server;
beforeAll(async () => {
  // Reads the whole body before answering, as a route does: the parser's error comes mid-request.
  server = createServer((req, res) => {
    req.on('error', () => undefined);
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  server.on('clientError', answerClientError);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

function exchange(bytes: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1', () => socket.write(bytes));
    let text = '';
    socket.on('data', (chunk) => (text += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(text));
  });
}

describe('answerClientError', () => {
  it.each([
    ['bad chunk size', 'POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n'],
    ['two lengths', 'POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab'],
    ['headers past the limit', `GET / HTTP/1.1\r\nhost: x\r\nx-big: ${'x'.repeat(20_000)}\r\n\r\n`],
    ['a broken request line', 'GET /\u0001 HTTP/1.1\r\nhost: x\r\n\r\n'],
  ])('answers %s with the contract error body and a request id', async (_label, request) => {
    const answer = await exchange(request);
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toMatch(/\r\ncontent-type: application\/json; charset=utf-8\r\n/);
    expect(answer).toMatch(/\r\nx-request-id: [0-9a-f-]{36}\r\n/);
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request', param: null });
  });
});
