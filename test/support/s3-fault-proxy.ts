import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { S3 } from './env';

/**
 * An HTTP proxy in front of the real S3 server that can make S3 fail: while `failParts` is set, every
 * UploadPart answers 500 InternalError (as an overloaded S3 does); everything else passes through
 * unchanged (headers included, so SigV4 signatures still verify).
 */
export class S3FaultProxy {
  private server?: Server;
  failParts = false;
  partsSeen = 0;
  partsFailed = 0;

  async start(): Promise<string> {
    const target = new URL(S3.endpoint);
    this.server = createServer((req, res) => {
      const isPart = req.method === 'PUT' && /[?&]partNumber=/.test(req.url ?? '');
      if (isPart) this.partsSeen++;
      if (isPart && this.failParts) {
        this.partsFailed++;
        req.resume();
        req.on('end', () => {
          res.writeHead(500, { 'content-type': 'application/xml' });
          res.end(
            '<?xml version="1.0" ' +
              'encoding="UTF-8"?><Error><Code>InternalError</Code><Message>injected</Message></Error>',
          );
        });
        return;
      }
      const upstream = request(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
