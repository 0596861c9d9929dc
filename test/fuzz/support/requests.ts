import fc from 'fast-check';

/** Ids the fuzzer's requests may name: the caller's own, another principal's, and ones it may delete. */
export interface Fixtures {
  aliceKey: string;
  bobKey: string;
  fileId: string;
  fileEtag: string;
  sessionId: string;
  containerId: string;
  containerFileId: string;
  pdfFileId: string;
  bobFileId: string;
  bobSessionId: string;
  bobContainerId: string;
  bobContainerFileId: string;
  victims: { fileIds: string[]; sessionIds: string[]; containerIds: string[] };
}

/** One request as bytes on a socket: whatever fetch could not send (bad chunking, duplicates, early hang-ups). */
export interface FuzzRequest {
  /** What kind of abuse, for the report. */
  kind: string;
  method: string;
  path: string;
  headers: [string, string][];
  body: Buffer;
  /** Send `Transfer-Encoding: chunked` framing written by hand in `body` (no Content-Length added). */
  rawFraming?: boolean;
  /** Hang up after this many bytes of the request: no answer is expected. */
  disconnectAfter?: number;
  /** The request is incomplete on purpose: the server may close it without an answer once idle. */
  incomplete?: boolean;
}

const CONTROL = ['\u0000', '\u0001', '\t', '\n', '\r', '\u001b', '\u007f', '\u0085', '\u009f'];
const BIDI = ['\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069'];
const ODD = [
  '',
  '.',
  '..',
  '../../etc/passwd',
  '..\\..\\boot.ini',
  'C:\\x',
  '/',
  '%00',
  '%2e%2e%2f',
  '\ufeff',
  '\ud800',
  '\udfff',
  'e\u0301',
  '\u00e9',
  '𝔘𝔥𝔭',
  '👩‍👩‍👧‍👦',
  '\u200b',
  'ｆｕｌｌ',
  'NUL',
  'con.txt',
  '"quoted"',
  "it's",
  '<script>',
  'a'.repeat(300),
  'é'.repeat(200),
  '{}',
  '[]',
  'null',
  '-1',
  'true',
];

/** A string with control and bidi characters, odd Unicode, path tricks, or just anything. */
export const evilString = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...ODD) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.string({ maxLength: 10 }), fc.constantFrom(...CONTROL, ...BIDI), fc.string({ maxLength: 10 }))
      .map(([a, b, c]) => `${a}${b}${c}`),
  },
);

/** Numbers as a query string or JSON writes them, and what neither should accept. */
export const evilNumber = fc.oneof(
  fc.integer().map(String),
  fc.constantFrom(
    '0',
    '-1',
    '1.5',
    '1e3',
    '1e309',
    '-0',
    '0x10',
    'NaN',
    'Infinity',
    '１',
    ' 5',
    '5abc',
    '',
    '9'.repeat(400),
  ),
  fc.double().map(String),
  fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }).map(String),
);

/** Percent-encodes the UTF-8 bytes of a string (lone surrogates included, as U+FFFD). */
const percent = (value: string) =>
  [...Buffer.from(value, 'utf8')]
    .map((byte) =>
      /[A-Za-z0-9._~-]/.test(String.fromCharCode(byte))
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');

/** The UTF-8 bytes of a string as they would sit raw in a request line (no space or control can be sent). */
const rawInPath = (value: string) =>
  Buffer.from(value.replace(/[\s\u0000-\u001f\u007f#?]/g, '_'), 'utf8').toString('latin1');

const base62 = fc.stringMatching(/^[A-Za-z0-9]{24}$/);

/** An id of some kind for a route expecting `prefix`: own, foreign, unknown, malformed. */
function idFor(own: string[], foreign: string[], prefix: string) {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...own) },
    { weight: 2, arbitrary: fc.constantFrom(...(foreign.length > 0 ? foreign : own)) },
    { weight: 1, arbitrary: base62.map((random) => `${prefix}${random}`) },
    { weight: 1, arbitrary: base62.map((random) => `${prefix === 'file_' ? 'sess_' : 'file_'}${random}`) },
    { weight: 2, arbitrary: evilString.map((s) => percent(s)) },
    { weight: 1, arbitrary: evilString.map((s) => rawInPath(s)) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        `${prefix}`,
        `${prefix}short`,
        `${prefix}${'A'.repeat(500)}`,
        '..',
        '%2e%2e',
        '.%2F..',
      ),
    },
  );
}

const query = (pairs: [string, string | undefined][]) => {
  const present = pairs.filter(([, value]) => value !== undefined) as [string, string][];
  return present.length ? `?${present.map(([k, v]) => `${k}=${percent(v)}`).join('&')}` : '';
};

const listQuery = (ids: fc.Arbitrary<string>) =>
  fc
    .record(
      {
        limit: evilNumber,
        after: fc.oneof(ids, evilString),
        order: fc.oneof(fc.constantFrom('asc', 'desc', 'ASC', ''), evilString),
        purpose: fc.oneof(fc.constantFrom('user_data', 'assistants', 'fine-tune', 'batch'), evilString),
      },
      { requiredKeys: [] },
    )
    .map((q) =>
      query([
        ['limit', q.limit],
        ['after', q.after],
        ['order', q.order],
        ['purpose', q.purpose],
      ]),
    );

const auth = (f: Fixtures) =>
  fc.oneof(
    { weight: 12, arbitrary: fc.constant([['authorization', `Bearer ${f.aliceKey}`]] as [string, string][]) },
    { weight: 1, arbitrary: fc.constant([['authorization', `Bearer ${f.bobKey}`]] as [string, string][]) },
    { weight: 1, arbitrary: fc.constant([] as [string, string][]) },
    {
      weight: 1,
      arbitrary: fc.constant([
        ['authorization', `Bearer ${f.aliceKey}`],
        ['authorization', `Bearer ${f.bobKey}`],
      ] as [string, string][]),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(
          'Bearer ',
          'Basic YWxpY2U6eA==',
          `bearer ${f.aliceKey}`,
          `Bearer  ${f.aliceKey}`,
          'Bearer sk_\u202e',
        )
        .map((value) => [['authorization', headerSafe(value)]] as [string, string][]),
    },
  );

/** Header values may carry any byte but CR, LF and NUL on the wire (the parser refuses those outright). */
const headerSafe = (value: string) => Buffer.from(value.replace(/[\r\n\0]/g, ' '), 'utf8').toString('latin1');

/** Headers besides the main ones: duplicates, an oversized one, a hostile request id, client noise. */
const extraHeaders = fc.array(
  fc.oneof(
    evilString.map((s) => ['x-request-id', headerSafe(s)] as [string, string]),
    fc.constant(['x-request-id', 'a'.repeat(129)] as [string, string]),
    fc.constant(['x-stainless-lang', 'js'] as [string, string]),
    fc.constant(['accept', 'application/binary'] as [string, string]),
    fc.constant(['x-big', 'x'.repeat(20_000)] as [string, string]),
    fc.constant(['accept-encoding', 'gzip, br, zstd, *;q=0'] as [string, string]),
    evilString.map((s) => ['x-odd', headerSafe(s)] as [string, string]),
  ),
  { maxLength: 3 },
);

const rangeHeader = fc.oneof(
  fc.constantFrom(
    'bytes=0-0',
    'bytes=-1',
    'bytes=0-',
    'bytes=1-2',
    'bytes=5-1',
    'bytes=-0',
    'bytes=0-1,3-4',
    'bytes=999999999999999999999-',
    'bytes=0-99999999999999999999999',
    'bytes=--1',
    'bytes=abc',
    'items=0-1',
    'bytes=',
    'bytes= 0 - 1',
    `bytes=${Array.from({ length: 300 }, (_, i) => `${i}-${i}`).join(',')}`,
  ),
  fc.tuple(evilNumber, evilNumber).map(([a, b]) => `bytes=${a}-${b}`),
  evilString.map(headerSafe),
);

const inmHeader = (etag: string) =>
  fc.oneof(
    fc.constantFrom(etag, `W/${etag}`, '*', `"x", ${etag}`, etag.replaceAll('"', ''), `${etag}, `.repeat(200)),
    evilString.map(headerSafe),
  );

const JSON_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/json, text/plain',
  'multipart/form-data',
];

/** How many strings the wide body's array holds: past the arguments V8 takes in one `push(...array)` call. */
const WIDE_ARRAY_LENGTH = 300_000;
/** How deeply the deep body nests arrays: past the stack of JSON.stringify, zod and every recursive walk. */
const DEEP_NESTING = 100_000;

/**
 * Bodies shaped to overflow the stack of whatever reads them (issue 37): a very long array of strings and
 * arrays nested very deeply, under `field` when the route has one. The strings are empty so that the
 * array fits the fuzz stack's max_request_bytes; the texts are built once per field and shared.
 */
const stackBreakers = new Map<string, { wide: string; deep: string }>();
export function stackBreaker(shape: 'wide' | 'deep', field: string | undefined): string {
  const key = field ?? '';
  if (!stackBreakers.has(key)) {
    const wide = `[${'"",'.repeat(WIDE_ARRAY_LENGTH - 1)}""]`;
    const deep = '['.repeat(DEEP_NESTING) + ']'.repeat(DEEP_NESTING);
    const under = (value: string) => (field === undefined ? value : `{${JSON.stringify(field)}:${value}}`);
    stackBreakers.set(key, { wide: under(wide), deep: under(deep) });
  }
  return stackBreakers.get(key)![shape];
}

/**
 * A JSON body: shaped like the route's, with hostile values; any JSON at all; something that is not
 * JSON; or one built to overflow a stack.
 */
function jsonBody(fields: Record<string, fc.Arbitrary<unknown>>) {
  const shaped = fc.record(fields, { requiredKeys: [] }).map((value) => JSON.stringify(value));
  const hostileValue = fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    evilString,
    fc.constantFrom(1e308, -1, 0.5, 2 ** 53 + 1, null, true, [], {}),
  );
  const anyShape = fc.dictionary(
    fc.constantFrom(...Object.keys(fields), 'model', '__proto__', 'constructor'),
    hostileValue,
    {
      maxKeys: 5,
    },
  );
  return fc
    .oneof(
      { weight: 3, arbitrary: shaped },
      { weight: 3, arbitrary: anyShape.map((value) => JSON.stringify(value)) },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.stringify(value)) },
      {
        weight: 2,
        arbitrary: fc.oneof(
          shaped.chain((text) => fc.nat(text.length).map((n) => text.slice(0, n))),
          fc.constantFrom(
            '{',
            '{"a":1,}',
            '{"a":NaN}',
            "{'a':1}",
            '\ufeff{}',
            '[1,2',
            '{"a":"\\ud800"}',
            '',
            ' ',
            'null',
          ),
          fc.constant('['.repeat(5000) + ']'.repeat(5000)),
          fc.constant(`{${Array.from({ length: 2000 }, (_, i) => `"k${i}":${i}`).join(',')}}`),
          fc.constant('{"metadata":{"a":1},"metadata":[]}'),
        ),
      },
      {
        weight: 1,
        arbitrary: fc
          .tuple(fc.constantFrom('wide' as const, 'deep' as const), fc.constantFrom(undefined, ...Object.keys(fields)))
          .map(([shape, field]) => stackBreaker(shape, field)),
      },
    )
    .map((text) => ({ text, raw: false as boolean }));
}

const purpose = fc.oneof(
  fc.constantFrom('user_data', 'assistants', 'fine-tune', 'vision', 'batch', 'evals'),
  evilString,
);

interface Part {
  name: string;
  filename?: string;
  filenameStar?: string;
  type?: string;
  data: Buffer;
}

const fileParts = fc.array(
  fc.record(
    {
      name: fc.oneof({ weight: 4, arbitrary: fc.constant('file') }, { weight: 1, arbitrary: evilString }),
      filename: fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom('a.txt', 'report.pdf', 'x') },
        { weight: 3, arbitrary: evilString },
      ),
      filenameStar: fc.oneof(
        fc.constantFrom("UTF-8''%E2%80%AEexe.txt", "UTF-8''%ZZ", "latin1''caf%E9", "UTF-8''", "UTF-8''..%2F..%2Fx"),
        evilString.map((s) => `UTF-8''${percent(s)}`),
      ),
      type: fc.oneof(
        fc.constantFrom('text/plain', 'application/pdf', 'image/png', 'application/octet-stream'),
        evilString,
      ),
      data: fc.oneof(
        fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
        fc.constant(Buffer.alloc(0)),
      ),
    },
    { requiredKeys: ['name', 'data'] },
  ),
  { minLength: 0, maxLength: 3 },
);

const fieldParts = fc.array(
  fc.oneof(
    purpose.map((value) => ({ name: 'purpose', data: Buffer.from(value) })),
    fc
      .constantFrom('created_at', 'last_active_at', '')
      .map((value) => ({ name: 'expires_after[anchor]', data: Buffer.from(value) })),
    evilNumber.map((value) => ({ name: 'expires_after[seconds]', data: Buffer.from(value) })),
    fc.tuple(evilString, evilString).map(([name, value]) => ({ name, data: Buffer.from(value) })),
  ),
  { maxLength: 3 },
);

/** A multipart body: any order of fields and file parts, odd names, and broken framing now and then. */
const multipart = fc
  .record({
    boundary: fc.oneof(
      { weight: 5, arbitrary: fc.constant('fuzzBoundary7MA4YWxk') },
      { weight: 1, arbitrary: fc.constantFrom('', 'a'.repeat(100), 'x y', '"q"') },
    ),
    parts: fc
      .tuple(fileParts, fieldParts)
      .chain(([files, fields]) => fc.shuffledSubarray([...files, ...fields], { minLength: 0 })),
    closing: fc.constantFrom('proper', 'proper', 'proper', 'none', 'garbage', 'no-crlf'),
    typeHeader: fc.constantFrom('proper', 'proper', 'proper', 'no-boundary', 'other-boundary', 'mixed', 'text', 'none'),
  })
  .map(({ boundary, parts, closing, typeHeader }) => {
    const escape = (value: string) => value.replace(/"/g, '%22');
    const chunks: Buffer[] = [];
    for (const part of parts as Part[]) {
      let disposition = `form-data; name="${escape(part.name)}"`;
      if (part.filename !== undefined) disposition += `; filename="${escape(part.filename)}"`;
      if (part.filenameStar !== undefined) disposition += `; filename*=${part.filenameStar}`;
      const head = `--${boundary}\r\nContent-Disposition: ${disposition}\r\n${part.type ? `Content-Type: ${part.type}\r\n` : ''}\r\n`;
      chunks.push(Buffer.from(head, 'utf8'), part.data, Buffer.from('\r\n'));
    }
    if (closing === 'proper') chunks.push(Buffer.from(`--${boundary}--\r\n`));
    if (closing === 'garbage') chunks.push(Buffer.from(`--${boundary}-x\r\njunk`));
    if (closing === 'no-crlf') chunks.push(Buffer.from(`--${boundary}--`));
    const types: Record<string, string | undefined> = {
      proper: `multipart/form-data; boundary=${boundary}`,
      'no-boundary': 'multipart/form-data',
      'other-boundary': 'multipart/form-data; boundary=somethingElse',
      mixed: `multipart/mixed; boundary=${boundary}`,
      text: 'text/plain',
      none: undefined,
    };
    return { body: Buffer.concat(chunks), contentType: types[typeHeader] };
  });

/** Every route of docs/api.md, with the abuse that fits it. */
/** tus headers, each present or not, with hostile values beside valid ones. */
const tusHeaders = fc
  .record(
    {
      version: fc.oneof(fc.constantFrom('1.0.0', '0.2.2', ''), evilString.map(headerSafe)),
      length: evilNumber,
      offset: evilNumber,
      metadata: fc.oneof(
        fc.constantFrom('filename dGVzdC50eHQ=,purpose dXNlcl9kYXRh', 'filename', 'filename @@@', ',,,', 'a b c'),
        evilString.map(headerSafe),
      ),
      contentType: fc.constantFrom('application/offset+octet-stream', 'text/plain', ''),
      checksum: fc.constantFrom('sha1 AAAA', 'sha256 @@', 'md5 x', 'sha1', ''),
    },
    { requiredKeys: [] },
  )
  .map((h) => {
    const headers: [string, string][] = [];
    if (h.version !== undefined) headers.push(['tus-resumable', h.version]);
    if (h.length !== undefined) headers.push(['upload-length', headerSafe(h.length)]);
    if (h.offset !== undefined) headers.push(['upload-offset', headerSafe(h.offset)]);
    if (h.metadata !== undefined) headers.push(['upload-metadata', h.metadata]);
    if (h.contentType !== undefined) headers.push(['content-type', h.contentType]);
    if (h.checksum !== undefined) headers.push(['upload-checksum', h.checksum]);
    return headers;
  });

export function requestArbitrary(f: Fixtures): fc.Arbitrary<FuzzRequest> {
  const fileId = idFor([f.fileId, f.pdfFileId], [f.bobFileId], 'file_');
  const sessionId = idFor([f.sessionId], [f.bobSessionId], 'sess_');
  const containerId = idFor([f.containerId], [f.bobContainerId], 'cntr_');
  const containerFileId = idFor([f.containerFileId, f.pdfFileId], [f.bobContainerFileId], 'file_');
  const victimFile = idFor(f.victims.fileIds, [f.bobFileId], 'file_');
  const victimSession = idFor(f.victims.sessionIds, [f.bobSessionId], 'sess_');
  const victimContainer = idFor(f.victims.containerIds, [f.bobContainerId], 'cntr_');
  // Resumable uploads: no fixture of their own; well-formed unknown ids and malformed ones.
  const uploadId = idFor([`upload_${'0'.repeat(24)}`], [], 'upload_');

  const get = (kind: string, path: fc.Arbitrary<string>, extra: fc.Arbitrary<[string, string][]> = fc.constant([])) =>
    fc.tuple(path, auth(f), extraHeaders, extra).map(([p, a, x, e]): FuzzRequest => ({
      kind,
      method: 'GET',
      path: p,
      headers: [...a, ...x, ...e],
      body: Buffer.alloc(0),
    }));
  const del = (kind: string, path: fc.Arbitrary<string>) =>
    fc
      .tuple(path, auth(f))
      .map(([p, a]): FuzzRequest => ({ kind, method: 'DELETE', path: p, headers: a, body: Buffer.alloc(0) }));
  const postJson = (kind: string, path: fc.Arbitrary<string>, fields: Record<string, fc.Arbitrary<unknown>>) =>
    fc
      .tuple(
        path,
        auth(f),
        extraHeaders,
        jsonBody(fields),
        fc.constantFrom(...JSON_TYPES, JSON_TYPES[0], JSON_TYPES[0]),
      )
      .map(([p, a, x, body, type]): FuzzRequest => ({
        kind,
        method: 'POST',
        path: p,
        headers: [...a, ...x, ['content-type', type]],
        body: Buffer.from(body.text, 'utf8'),
      }));
  const postMultipart = (kind: string, path: fc.Arbitrary<string>) =>
    fc.tuple(path, auth(f), multipart).map(([p, a, m]): FuzzRequest => ({
      kind,
      method: 'POST',
      path: p,
      headers: [
        ...a,
        ...(m.contentType === undefined ? [] : ([['content-type', m.contentType]] as [string, string][])),
      ],
      body: m.body,
    }));
  const download = (kind: string, path: fc.Arbitrary<string>) =>
    get(
      kind,
      path,
      fc
        .record({ range: rangeHeader, inm: inmHeader(f.fileEtag), twice: fc.boolean() }, { requiredKeys: [] })
        .map(({ range, inm, twice }) => {
          const headers: [string, string][] = [];
          if (range !== undefined) headers.push(['range', range]);
          if (inm !== undefined) headers.push(['if-none-match', inm]);
          if (twice && range !== undefined) headers.push(['range', 'bytes=0-0']);
          return headers;
        }),
    );
  const inputItem = fc.oneof(
    fc.record({ type: fc.constant('input_text'), text: fc.oneof(evilString, fc.jsonValue()) }),
    fc.record({ type: fc.constant('input_file'), file_id: fc.oneof(fileId, fc.jsonValue()) }, { requiredKeys: [] }),
    fc.record(
      {
        type: fc.constant('input_file'),
        filename: fc.oneof(evilString, fc.jsonValue()),
        file_data: fc.oneof(
          fc.constantFrom(
            'data:text/plain;base64,aGVsbG8=',
            'data:;base64,',
            'data:text/plain,hello',
            'data:text/plain;base64,@@@@',
            'aGVsbG8=',
          ),
          evilString,
        ),
        file_url: fc.constant('http://169.254.169.254/'),
      },
      { requiredKeys: [] },
    ),
  );

  const routes: fc.Arbitrary<FuzzRequest>[] = [
    get(
      'public',
      fc.constantFrom(
        '/healthz',
        '/readyz',
        '/metrics',
        '/v1/limits',
        '/openapi.json',
        '/docs',
        '/docs/assets/init.js',
      ),
    ),
    get(
      'odd path',
      fc.oneof(
        fc.constantFrom(
          '//v1/files',
          '/v1/files/',
          '/V1/FILES',
          '/v1/files/..',
          '/v1/files/%2e%2e/x',
          '/v1//sessions',
          '/%00',
          '/v1/limits?x=%ff',
        ),
        evilString.map((s) => `/v1/${percent(s)}`),
      ),
    ),
    fc
      .tuple(
        fc.constantFrom('PUT', 'PATCH', 'OPTIONS', 'HEAD', 'TRACE', 'FOO', 'DELETE', 'POST'),
        fc.constantFrom('/v1/files', '/v1/limits', '/healthz', '/v1/sessions/x', '/metrics'),
        auth(f),
      )
      .map(([method, path, a]): FuzzRequest => ({ kind: 'method', method, path, headers: a, body: Buffer.alloc(0) })),
    get(
      'list files',
      listQuery(fileId).map((q) => `/v1/files${q}`),
    ),
    get(
      'get file',
      fileId.map((id) => `/v1/files/${id}`),
    ),
    download(
      'file content',
      fileId.map((id) => `/v1/files/${id}/content`),
    ),
    del(
      'delete file',
      victimFile.map((id) => `/v1/files/${id}`),
    ),
    postMultipart('upload', fc.constant('/v1/files')),
    postJson('new session', fc.constant('/v1/sessions'), {
      metadata: fc.oneof(fc.dictionary(evilString, evilString, { maxKeys: 20 }), fc.jsonValue()),
    }),
    get(
      'list sessions',
      listQuery(sessionId).map((q) => `/v1/sessions${q}`),
    ),
    get(
      'get session',
      sessionId.map((id) => `/v1/sessions/${id}`),
    ),
    del(
      'delete session',
      victimSession.map((id) => `/v1/sessions/${id}`),
    ),
    get(
      'session files',
      fc.tuple(sessionId, listQuery(containerFileId)).map(([id, q]) => `/v1/sessions/${id}/files${q}`),
    ),
    get(
      'archive',
      sessionId.map((id) => `/v1/sessions/${id}/files/archive`),
    ),
    postJson('new container', fc.constant('/v1/containers'), {
      name: fc.oneof(evilString, fc.jsonValue()),
      file_ids: fc.oneof(fc.array(fileId, { maxLength: 3 }), fc.jsonValue()),
    }),
    get(
      'list containers',
      listQuery(containerId).map((q) => `/v1/containers${q}`),
    ),
    get(
      'get container',
      containerId.map((id) => `/v1/containers/${id}`),
    ),
    del(
      'delete container',
      victimContainer.map((id) => `/v1/containers/${id}`),
    ),
    postMultipart(
      'container upload',
      containerId.map((id) => `/v1/containers/${id}/files`),
    ),
    postJson(
      'container copy',
      containerId.map((id) => `/v1/containers/${id}/files`),
      { file_id: fc.oneof(fileId, fc.jsonValue()) },
    ),
    get(
      'container files',
      fc.tuple(containerId, listQuery(containerFileId)).map(([id, q]) => `/v1/containers/${id}/files${q}`),
    ),
    get(
      'container file',
      fc.tuple(containerId, containerFileId).map(([c, id]) => `/v1/containers/${c}/files/${id}`),
    ),
    download(
      'container content',
      fc.tuple(containerId, containerFileId).map(([c, id]) => `/v1/containers/${c}/files/${id}/content`),
    ),
    get(
      'preview',
      fc.tuple(containerId, containerFileId).map(([c, id]) => `/v1/containers/${c}/files/${id}/pdf`),
    ),
    del(
      'delete container file',
      fc.tuple(containerId, victimFile).map(([c, id]) => `/v1/containers/${c}/files/${id}`),
    ),
    postJson('response', fc.constant('/v1/responses'), {
      session_id: fc.oneof(sessionId, fc.jsonValue()),
      input: fc.oneof(
        evilString,
        fc.array(
          fc.record(
            {
              role: fc.oneof(fc.constant('user'), evilString),
              content: fc.oneof(fc.array(inputItem, { maxLength: 3 }), fc.jsonValue()),
            },
            { requiredKeys: [] },
          ),
          { maxLength: 2 },
        ),
        fc.jsonValue(),
      ),
      agent: fc.oneof(fc.constantFrom('report', 'http', 'nope'), evilString),
      model: fc.oneof(fc.constantFrom('gpt-4o', 'report'), evilString),
      stream: fc.jsonValue(),
      background: fc.jsonValue(),
      metadata: fc.jsonValue(),
    }),
    get(
      'get response',
      idFor(['resp_000000000000000000000000'], [], 'resp_').map((id) => `/v1/responses/${id}`),
    ),
    postJson('new upload', fc.constant('/v1/uploads'), {
      filename: fc.oneof(evilString, fc.jsonValue()),
      purpose: fc.oneof(purpose, fc.jsonValue()),
      bytes: fc.oneof(evilNumber.map(Number), evilNumber, fc.jsonValue()),
      mime_type: fc.oneof(fc.constantFrom('text/plain', 'application/pdf', ''), evilString),
      expires_after: fc.oneof(
        fc.record({ anchor: fc.oneof(fc.constant('created_at'), evilString), seconds: evilNumber.map(Number) }),
        fc.jsonValue(),
      ),
    }),
    get(
      'get upload',
      uploadId.map((id) => `/v1/uploads/${id}`),
    ),
    get(
      'upload parts',
      uploadId.map((id) => `/v1/uploads/${id}/parts`),
    ),
    postMultipart(
      'upload part',
      uploadId.map((id) => `/v1/uploads/${id}/parts`),
    ),
    postJson(
      'complete upload',
      uploadId.map((id) => `/v1/uploads/${id}/complete`),
      {
        part_ids: fc.oneof(fc.array(idFor([`part_${'0'.repeat(24)}`], [], 'part_'), { maxLength: 3 }), fc.jsonValue()),
        md5: fc.oneof(evilString, fc.jsonValue()),
      },
    ),
    postJson(
      'cancel upload',
      uploadId.map((id) => `/v1/uploads/${id}/cancel`),
      {},
    ),
    fc.tuple(auth(f), tusHeaders, fc.uint8Array({ maxLength: 64 })).map(([a, t, body]): FuzzRequest => ({
      kind: 'tus create',
      method: 'POST',
      path: '/v1/tus',
      headers: [...a, ...t],
      body: Buffer.from(body),
    })),
    fc
      .tuple(
        fc.constantFrom('HEAD', 'PATCH', 'DELETE', 'OPTIONS'),
        fc.oneof(uploadId, evilString.map(percent)),
        auth(f),
        tusHeaders,
        fc.uint8Array({ maxLength: 64 }),
      )
      .map(([method, id, a, t, body]): FuzzRequest => ({
        kind: `tus ${method.toLowerCase()}`,
        method,
        path: `/v1/tus/${id}`,
        headers: [...a, ...t],
        body: method === 'PATCH' ? Buffer.from(body) : Buffer.alloc(0),
      })),
  ];

  const wellFormed = fc.oneof(...routes);
  return fc.oneof(
    { weight: 20, arbitrary: wellFormed },
    { weight: 2, arbitrary: wellFormed.chain((request) => brokenChunks(request)) },
    {
      weight: 1,
      arbitrary: wellFormed.chain((request) =>
        fc.nat(200).map((n): FuzzRequest => ({ ...request, kind: `${request.kind} (hang-up)`, disconnectAfter: n })),
      ),
    },
    { weight: 1, arbitrary: wellFormed.chain((request) => conflictingFraming(request)) },
  );
}

/** The body sent with chunked transfer encoding, framed badly in one of several ways. */
function brokenChunks(request: FuzzRequest): fc.Arbitrary<FuzzRequest> {
  return fc
    .constantFrom('bad-hex', 'short-chunk', 'extension', 'good', 'no-terminator', 'huge-size')
    .map((flavour): FuzzRequest => {
      const body = request.body;
      const frames: Record<string, string | Buffer> = {
        'bad-hex': Buffer.concat([Buffer.from('zz\r\n'), body, Buffer.from('\r\n0\r\n\r\n')]),
        'short-chunk': Buffer.concat([
          Buffer.from(`${(body.length + 5).toString(16)}\r\n`),
          body,
          Buffer.from('\r\n0\r\n\r\n'),
        ]),
        extension: Buffer.concat([
          Buffer.from(`${body.length.toString(16)};name="x\u0001"\r\n`),
          body,
          Buffer.from('\r\n0\r\n\r\n'),
        ]),
        good: Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]),
        'no-terminator': Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n')]),
        'huge-size': Buffer.from('fffffffffffffffffff\r\nabc\r\n0\r\n\r\n'),
      };
      return {
        ...request,
        kind: `${request.kind} (chunked: ${flavour})`,
        headers: [...request.headers, ['transfer-encoding', 'chunked']],
        body: Buffer.from(frames[flavour]),
        rawFraming: true,
        incomplete: flavour === 'no-terminator' || flavour === 'short-chunk',
      };
    });
}

/** Two lengths, or a length beside chunked: what request smuggling tries. */
function conflictingFraming(request: FuzzRequest): fc.Arbitrary<FuzzRequest> {
  return fc
    .constantFrom('two-lengths', 'length-and-chunked', 'negative-length', 'huge-length')
    .map((flavour): FuzzRequest => {
      const n = request.body.length;
      const headers: Record<string, [string, string][]> = {
        'two-lengths': [
          ['content-length', String(n)],
          ['content-length', String(n + 1)],
        ],
        'length-and-chunked': [
          ['content-length', String(n)],
          ['transfer-encoding', 'chunked'],
        ],
        'negative-length': [['content-length', '-1']],
        'huge-length': [['content-length', '99999999999999999999']],
      };
      return {
        ...request,
        kind: `${request.kind} (framing: ${flavour})`,
        headers: [...request.headers, ...headers[flavour]],
        rawFraming: true,
        incomplete: true,
      };
    });
}
