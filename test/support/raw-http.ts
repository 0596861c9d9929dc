import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';

/**
 * A raw HTTP/1.1 client on a socket: for what fetch cannot do — send headers and hold the body back,
 * stall mid-body, stop reading a response — and to watch what the server does about it.
 */
export class RawExchange {
  private received = Buffer.alloc(0);
  private readonly closed: Promise<void>;
  closedAt: number | null = null;

  private constructor(
    readonly socket: Socket,
    stallAfterHead: boolean,
  ) {
    let stallPending = stallAfterHead;
    socket.on('data', (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk]);
      // Pausing here, in the same tick the head arrived, is what keeps a fast server from sending the
      // whole body before the test gets round to stalling. Once only: resumeReading() reads on.
      if (stallPending && this.received.includes('\r\n\r\n')) {
        stallPending = false;
        socket.pause();
      }
    });
    this.closed = new Promise((resolve) => {
      const done = () => {
        this.closedAt ??= Date.now();
        resolve();
      };
      socket.once('close', done);
      socket.once('error', done);
    });
  }

  /** `stallAfterHead`: stop reading as soon as the response head has arrived (a reader that stalls). */
  static open(port: number, head: string, options: { stallAfterHead?: boolean } = {}): Promise<RawExchange> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => {
        const exchange = new RawExchange(socket, options.stallAfterHead ?? false);
        socket.write(head);
        resolve(exchange);
      });
      socket.once('error', reject);
    });
  }

  /** The request line and headers, ending the head; `headers` as name → value. */
  static head(method: string, path: string, headers: Record<string, string | number>): string {
    const lines = Object.entries({ host: '127.0.0.1', ...headers }).map(([name, value]) => `${name}: ${value}`);
    return `${method} ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`;
  }

  /** Writes, unless the server has closed the connection (then it reports false). */
  write(data: Buffer | string): boolean {
    if (this.socket.destroyed) return false;
    return this.socket.write(data);
  }

  /** Reads again: what the kernel still held arrives, then whatever end the server gave the connection. */
  resumeReading(): void {
    this.socket.resume();
  }

  get bytesReceived(): number {
    return this.received.length;
  }

  get text(): string {
    return this.received.toString('latin1');
  }

  /** The status of the answer once its status line has arrived, or null if none within `timeoutMs`. */
  async status(timeoutMs = 5_000): Promise<number | null> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const match = /^HTTP\/1\.1 (\d{3})/.exec(this.text);
      if (match) return Number(match[1]);
      if (this.socket.destroyed && this.received.length === 0) return null;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return null;
  }

  /** True when the server closed the connection within `timeoutMs`. */
  async closedWithin(timeoutMs: number): Promise<boolean> {
    return Promise.race([
      this.closed.then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs)),
    ]);
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** The resident set of a process, in bytes, from /proc. */
export function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
  return kib * 1024;
}
