import { createServer, request, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { S3 } from './env';

/**
 * An HTTP proxy in front of the real S3 server that can make S3 fail: while `failParts` is set, every
 * UploadPart answers 500 InternalError (as an overloaded S3 does); everything else passes through
 * unchanged (headers included, so SigV4 signatures still verify). `goAway` is the S3 server going down
 * as its clients see it (every connection reset, new ones refused); `comeBack` listens again on the same port.
 */
export class S3FaultProxy {
  private server?: Server;
  private port = 0;
  private readonly sockets = new Set<Socket>();
  failParts = false;
  partsSeen = 0;
  partsFailed = 0;

  async start(port = 0): Promise<string> {
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
      res.on('close', () => upstream.destroy());
      req.pipe(upstream);
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return `http://127.0.0.1:${this.port}`;
  }

  /** S3 goes away: every connection is reset mid-whatever, and new ones are refused. */
  async goAway(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    for (const socket of this.sockets) socket.resetAndDestroy();
    await closed;
  }

  /** S3 is back, at the same address. */
  async comeBack(): Promise<void> {
    await this.start(this.port);
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
