import { request } from 'node:http';
import { E2E_BASE_URL, KEYS } from './env';

export type Who = keyof typeof KEYS | 'anon';

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: Buffer;
  json: any;
}

/** A small fetch wrapper for the gateway: `who` picks the API key. */
export async function api(
  method: string,
  path: string,
  opts: {
    who?: Who;
    json?: unknown;
    form?: FormData;
    raw?: Buffer;
    headers?: Record<string, string>;
    base?: string;
  } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  const who = opts.who ?? 'alice';
  if (who !== 'anon') headers.authorization = `Bearer ${KEYS[who]}`;
  let body: string | FormData | Buffer | undefined;
  if (opts.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.json);
  } else if (opts.form) {
    body = opts.form;
  } else if (opts.raw) {
    body = opts.raw;
  }
  const res = await fetch(`${opts.base ?? E2E_BASE_URL}${path}`, { method, headers, body });
  const buffer = Buffer.from(await res.arrayBuffer());
  let json: unknown = undefined;
  if ((res.headers.get('content-type') ?? '').includes('json')) json = JSON.parse(buffer.toString('utf8'));
  return { status: res.status, headers: res.headers, body: buffer, json };
}

export function fileForm(
  filename: string,
  data: Buffer | string,
  type = 'application/octet-stream',
  fields: Record<string, string> = {},
  fieldsFirst = false,
): FormData {
  const form = new FormData();
  const add = () => Object.entries(fields).forEach(([k, v]) => form.append(k, v));
  if (fieldsFirst) add();
  form.append('file', new Blob([data], { type }), filename);
  if (!fieldsFirst) add();
  return form;
}

export async function upload(
  filename: string,
  data: Buffer | string,
  opts: { who?: Who; type?: string; fields?: Record<string, string>; base?: string } = {},
) {
  const res = await api('POST', '/v1/files', {
    who: opts.who,
    base: opts.base,
    form: fileForm(filename, data, opts.type, opts.fields),
  });
  if (res.status !== 200) throw new Error(`upload failed: ${res.status} ${res.body}`);
  return res.json;
}

export async function newSession(who: Who = 'alice') {
  const res = await api('POST', '/v1/sessions', { who, json: {} });
  if (res.status !== 200) throw new Error(`session failed: ${res.status} ${res.body}`);
  return res.json as { id: string; container_id: string };
}

export async function containerUpload(
  containerId: string,
  filename: string,
  data: Buffer | string,
  opts: { who?: Who; type?: string } = {},
) {
  const res = await api('POST', `/v1/containers/${containerId}/files`, {
    who: opts.who,
    form: fileForm(filename, data, opts.type),
  });
  if (res.status !== 200) throw new Error(`container upload failed: ${res.status} ${res.body}`);
  return res.json;
}

/** A raw multipart request written by hand: for bodies fetch cannot make (lying lengths, aborts, odd parts). */
export function rawRequest(
  path: string,
  opts: {
    method?: string;
    headers?: Record<string, string | number>;
    who?: Who;
    write: (req: ReturnType<typeof request>) => void;
    base?: string;
  },
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  // Host and port from the base, the path exactly as given: new URL() would resolve `..` segments.
  const base = new URL(opts.base ?? E2E_BASE_URL);
  return new Promise((resolve, reject) => {
    const who = opts.who ?? 'alice';
    const req = request({
      host: base.hostname,
      port: base.port,
      path,
      method: opts.method ?? 'POST',
      headers: { ...(who === 'anon' ? {} : { authorization: `Bearer ${KEYS[who]}` }), ...(opts.headers ?? {}) },
    });
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      let body = '';
      const done = () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
      res.on('data', (chunk) => (body += chunk));
      res.on('end', done);
      res.on('close', done);
    });
    // A server that answered early may close while we still write: the answer is what counts.
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    opts.write(req);
  });
}

export const BOUNDARY = 'uhpTestBoundary7MA4YWxkTrZu0gW';

export function partHead(name: string, filename?: string, type = 'application/octet-stream'): string {
  const disposition =
    filename === undefined ? `form-data; name="${name}"` : `form-data; name="${name}"; filename="${filename}"`;
  return `--${BOUNDARY}\r\nContent-Disposition: ${disposition}\r\n${filename === undefined ? '' : `Content-Type: ${type}\r\n`}\r\n`;
}

export const MULTIPART_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;
export const CLOSE = `\r\n--${BOUNDARY}--\r\n`;

/** A GET sent exactly as written: no URL normalisation of `..`, `%2e%2e` or backslashes (fetch would). */
export function rawGet(path: string, who: Who = 'alice') {
  return rawRequest(path, { method: 'GET', who, write: (req) => req.end() });
}
