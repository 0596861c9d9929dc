import { randomBytes } from 'node:crypto';
import { CLOSE, MULTIPART_TYPE, partHead } from './api';
import { RawExchange } from './raw-http';

/**
 * A multipart upload of `bytes` random bytes streamed over about `seconds` (16 chunks, chunked
 * transfer encoding) through a raw socket: long enough in flight for a test to stop the server under
 * it. `done` resolves with the answer's status, or null when the connection ended without one.
 */
export async function slowUpload(opts: {
  port: number;
  key: string;
  bytes: number;
  seconds: number;
  path?: string;
  filename?: string;
}): Promise<{ exchange: RawExchange; done: Promise<number | null> }> {
  const head = RawExchange.head('POST', opts.path ?? '/v1/files', {
    authorization: `Bearer ${opts.key}`,
    'content-type': MULTIPART_TYPE,
    'transfer-encoding': 'chunked',
  });
  const exchange = await RawExchange.open(opts.port, head);
  const chunk = (data: Buffer | string) =>
    exchange.write(
      Buffer.concat([
        Buffer.from(`${Buffer.byteLength(data).toString(16)}\r\n`),
        Buffer.from(data),
        Buffer.from('\r\n'),
      ]),
    );
  const done = (async () => {
    chunk(partHead('file', opts.filename ?? 'draining.bin'));
    const steps = 16;
    for (let i = 0; i < steps; i++) {
      if (!chunk(randomBytes(Math.floor(opts.bytes / steps))) && exchange.socket.destroyed) break;
      await new Promise((resolve) => setTimeout(resolve, (opts.seconds * 1000) / steps));
    }
    chunk(CLOSE);
    exchange.write('0\r\n\r\n');
    return exchange.status(15_000);
  })();
  return { exchange, done };
}
