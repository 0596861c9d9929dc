import { connect } from 'node:net';
import { ERROR_CODES } from '@app/contracts';
import type { FuzzRequest } from './requests';

export interface RawAnswer {
  status: number | null;
  headers: Map<string, string[]>;
  body: Buffer;
  /** The body ended before its Content-Length (or chunked terminator). */
  truncated: boolean;
}

/** Sends a request as bytes (Connection: close) and reads the answer to the end of the connection. */
export function send(port: number, request: FuzzRequest, timeoutMs: number): Promise<RawAnswer> {
  const framing: [string, string][] = request.rawFraming ? [] : [['content-length', String(request.body.length)]];
  const needsBody = request.body.length > 0 || ['POST', 'PUT', 'PATCH'].includes(request.method);
  const headers: [string, string][] = [
    ['host', `127.0.0.1:${port}`],
    ['connection', 'close'],
    ...request.headers,
    ...(needsBody ? framing : []),
  ];
  const head = Buffer.from(
    `${request.method} ${request.path} HTTP/1.1\r\n${headers.map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`,
    'latin1',
  );
  const bytes = Buffer.concat([head, request.body]);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = connect(port, '127.0.0.1');
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('connect', () => {
      if (request.disconnectAfter !== undefined) {
        socket.write(bytes.subarray(0, Math.min(request.disconnectAfter, bytes.length)));
        setTimeout(() => socket.destroy(), 5);
      } else socket.write(bytes); // not end(): a half-closed client is one that went away, to Node
    });
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(parse(Buffer.concat(chunks), request.method));
    });
  });
}

function parse(raw: Buffer, method: string): RawAnswer {
  const split = raw.indexOf('\r\n\r\n');
  if (split < 0) return { status: null, headers: new Map(), body: Buffer.alloc(0), truncated: raw.length > 0 };
  const [statusLine, ...lines] = raw.subarray(0, split).toString('latin1').split('\r\n');
  const headers = new Map<string, string[]>();
  for (const line of lines) {
    const name = line.slice(0, line.indexOf(':')).toLowerCase();
    headers.set(name, [...(headers.get(name) ?? []), line.slice(line.indexOf(':') + 1).trim()]);
  }
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0);
  let body = raw.subarray(split + 4);
  let truncated = false;
  if (method === 'HEAD' || status === 304 || status === 204) body = Buffer.alloc(0);
  else if (headers.get('transfer-encoding')?.[0] === 'chunked') {
    const out: Buffer[] = [];
    let at = 0;
    truncated = true;
    for (;;) {
      const eol = body.indexOf('\r\n', at);
      if (eol < 0) break;
      const size = parseInt(body.subarray(at, eol).toString('latin1'), 16);
      if (Number.isNaN(size)) break;
      if (size === 0) {
        truncated = false;
        break;
      }
      out.push(body.subarray(eol + 2, eol + 2 + size));
      at = eol + 2 + size + 2;
    }
    body = Buffer.concat(out);
  } else if (headers.has('content-length')) {
    const length = Number(headers.get('content-length')![0]);
    truncated = body.length < length;
    body = body.subarray(0, length);
  }
  return { status, headers, body, truncated };
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** 5xx answers the contract itself defines for previews: off (501), or a file that will not convert (502). */
const CONTRACT_5XX = new Set(['preview_unavailable', 'preview_failed']);

/** What is wrong with an answer, by the contract (docs/api.md, PROFILE.md §1); empty when nothing. */
export function judge(request: FuzzRequest, answer: RawAnswer): string[] {
  const problems: string[] = [];
  if (request.disconnectAfter !== undefined) return problems; // we hung up: nothing to judge but survival
  if (answer.status === null) {
    if (!request.incomplete) problems.push('no answer');
    return problems;
  }
  const one = (name: string) => answer.headers.get(name)?.[0];
  const type = one('content-type') ?? '';
  const requestId = one('x-request-id');
  if (!requestId || !REQUEST_ID.test(requestId)) problems.push(`X-Request-Id missing or not sane: ${requestId}`);
  if (answer.truncated) problems.push('body shorter than announced');
  if ((answer.headers.get('content-type')?.length ?? 0) > 1) problems.push('two Content-Type headers');
  let json: any;
  if (/^application\/json\b/.test(type) && answer.body.length > 0) {
    try {
      json = JSON.parse(answer.body.toString('utf8'));
    } catch {
      problems.push(`Content-Type ${type} but the body is not JSON`);
    }
  }
  if (answer.status >= 400 && request.method === 'HEAD') {
    // A HEAD answer has no body: only its head can be judged.
    if (!/^application\/json\b/.test(type)) problems.push(`error answer with Content-Type ${JSON.stringify(type)}`);
  } else if (answer.status >= 400) {
    if (!/^application\/json\b/.test(type)) problems.push(`error answer with Content-Type ${JSON.stringify(type)}`);
    const error = json?.error;
    const known = error && (ERROR_CODES as Record<string, { status: number; type: string }>)[error.code];
    if (
      !error ||
      typeof error.message !== 'string' ||
      !('param' in error) ||
      !(error.param === null || typeof error.param === 'string')
    )
      problems.push(`error body outside the contract: ${answer.body.toString('utf8').slice(0, 200)}`);
    else if (!known) problems.push(`unknown error code ${error.code}`);
    else if (known.status !== answer.status || known.type !== error.type)
      problems.push(`code ${error.code} (${error.type}) answered with ${answer.status}`);
    if (answer.status >= 500 && !(known && CONTRACT_5XX.has(error.code)))
      problems.push(`${answer.status} ${error?.code}`);
    if ((answer.status === 429 || answer.status === 503) && !one('retry-after'))
      problems.push(`${answer.status} without Retry-After`);
  }
  const path = request.path.split('?')[0];
  if (answer.status === 200 && request.method === 'GET') {
    if (path === '/metrics' && !/^text\/plain; version=0\.0\.4/.test(type)) problems.push(`/metrics as ${type}`);
    if (path === '/openapi.json' && json === undefined) problems.push('/openapi.json is not JSON');
    if (path === '/docs' && !/^text\/html/.test(type)) problems.push(`/docs as ${type}`);
    if (path.endsWith('/pdf') && !(type === 'application/pdf' && answer.body.subarray(0, 5).toString() === '%PDF-'))
      problems.push(`preview answered ${type} without a PDF body`);
    if (path.endsWith('/archive') && !(type === 'application/zip' && answer.body.subarray(0, 2).toString() === 'PK'))
      problems.push(`archive answered ${type} without a zip body`);
  }
  if (answer.status === 206 && !one('content-range')) problems.push('206 without Content-Range');
  if (answer.status === 416 && !/^bytes \*\/\d+$/.test(one('content-range') ?? ''))
    problems.push('416 without Content-Range bytes */size');
  return problems;
}
