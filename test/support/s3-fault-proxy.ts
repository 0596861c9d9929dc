import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { S3 } from './env';

/**
 * An HTTP proxy in front of the real S3 server that can make S3 fail: while `failParts` is set, every
 * UploadPart answers 500 InternalError (as an overloaded S3 does); everything else passes through
 * unchanged (headers included, so SigV4 signatures still verify). `goAway` is the S3 server going down
 * as its clients see it (every connection reset, new ones refused); `comeBack` listens again on the same port;
 * `stall` freezes it as a paused process (SIGSTOP) would look, `unstall` thaws it.
 */
export class S3FaultProxy {
  private server?: Server;
  private port = 0;
  private readonly sockets = new Set<Socket>();
  failParts = false;
  partsSeen = 0;
  partsFailed = 0;
  private stalled = false;
  /** Requests that arrived while stalled, forwarded once S3 moves again. */
  private readonly held: Array<() => void> = [];
  /** The exchanges in flight, each able to stop and restart its bytes both ways. */
  private readonly flowing = new Set<{ stop(): void; go(): void }>();

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
      const forward = () => {
        let answer: IncomingMessage | undefined;
        const upstream = request(
          { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
          (upstreamAnswer) => {
            answer = upstreamAnswer;
            if (this.stalled) return answer.pause(); // the head waits too; sent on `go`
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        const flow = {
          stop: () => {
            req.unpipe(upstream);
            req.pause();
            answer?.unpipe(res);
            answer?.pause();
          },
          go: () => {
            req.pipe(upstream);
            if (answer && !res.headersSent) res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer?.pipe(res);
          },
        };
        this.flowing.add(flow);
        upstream.on('error', () => res.destroy());
        res.on('close', () => {
          this.flowing.delete(flow);
          upstream.destroy();
        });
        req.pipe(upstream);
      };
      if (!this.stalled) return forward();
      req.pause();
      this.held.push(forward);
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return `http://127.0.0.1:${this.port}`;
  }

  /**
   * S3 stalls, as a paused server does: connections are taken and kept, but no byte moves either way, in
   * exchanges under way or new ones, until `unstall`.
   */
  stall(): void {
    this.stalled = true;
    for (const flow of this.flowing) flow.stop();
  }

  unstall(): void {
    this.stalled = false;
    for (const flow of this.flowing) flow.go();
    for (const forward of this.held.splice(0)) forward();
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
