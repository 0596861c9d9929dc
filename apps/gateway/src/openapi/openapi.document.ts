import { ERROR_CODES } from '@app/contracts';

/**
 * The gateway's OpenAPI 3.1 document, written by hand so that it describes the wire contract exactly
 * (multipart streaming, raw downloads, the error body) rather than what decorators infer. docs/api.md
 * says the same in prose; `npm run docs:api` exports it to docs/openapi.json and makes docs/api.md's route
 * table from it, and unit tests keep both in step with it and it in step with the controllers.
 */
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: object, description = 'OK') => ({ description, content: { 'application/json': { schema } } });
const errors = (...codes: number[]) =>
  Object.fromEntries(codes.map((code) => [String(code), { $ref: `#/components/responses/Error${code}` }]));
const idParam = (name: string, prefix: string) => ({
  name,
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: `^${prefix}_[0-9A-Za-z]{24,}$` },
});
const listParams = [
  { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
  {
    name: 'after',
    in: 'query',
    schema: { type: 'string' },
    description: 'The id of the last item of the previous page.',
  },
  { name: 'order', in: 'query', schema: { type: 'string', enum: ['asc', 'desc'], default: 'desc' } },
];
const list = (item: string) => ({
  type: 'object',
  required: ['object', 'data', 'first_id', 'last_id', 'has_more'],
  properties: {
    object: { const: 'list' },
    data: { type: 'array', items: ref(item) },
    first_id: { type: ['string', 'null'] },
    last_id: { type: ['string', 'null'] },
    has_more: { type: 'boolean' },
  },
});
const deleted = (object: string) => ({
  type: 'object',
  properties: { id: { type: 'string' }, object: { const: object }, deleted: { const: true } },
});
const rawBytes = {
  description:
    'The raw bytes with the file’s own Content-Type, Content-Disposition, nosniff, CSP sandbox, strong ETag and ' +
    'Accept-Ranges.',
  content: { '*/*': { schema: { type: 'string', format: 'binary' } } },
};
const download = (summary: string, parameters: object[]) => ({
  get: {
    summary,
    parameters: [
      ...parameters,
      { name: 'Range', in: 'header', schema: { type: 'string' } },
      { name: 'If-None-Match', in: 'header', schema: { type: 'string' } },
    ],
    responses: {
      '200': rawBytes,
      '206': { ...rawBytes, description: 'One byte range.' },
      '304': { description: 'Not modified.' },
      ...errors(401, 404, 416, 429),
    },
  },
});
const uploadBody = (withFields: boolean) => ({
  required: true,
  content: {
    'multipart/form-data': {
      schema: {
        type: 'object',
        required: ['file'],
        properties: {
          file: {
            type: 'string',
            format: 'binary',
            description: 'Streamed to object storage as it arrives; at most max_file_bytes.',
          },
          ...(withFields
            ? {
                purpose: {
                  type: 'string',
                  enum: ['assistants', 'batch', 'fine-tune', 'vision', 'user_data', 'evals'],
                  default: 'user_data',
                },
                'expires_after[anchor]': { const: 'created_at' },
                'expires_after[seconds]': { type: 'integer', minimum: 3600, maximum: 2592000 },
              }
            : {}),
        },
      },
    },
  },
});

const TUS_RESUMABLE = [{ name: 'Tus-Resumable', in: 'header', required: true, schema: { const: '1.0.0' } }];

const header = (description: string, type = 'string') => ({ description, schema: { type } });

/** tus discovery: OPTIONS needs no key and no Tus-Resumable, and doubles as a browser's preflight. */
const tusDiscovery = {
  summary: 'tus 1.0: discovery, and a browser’s CORS preflight',
  description:
    'Answered before the key check. The CORS headers of a preflight (see the OPTIONS of any /v1 path) come ' +
    'with tus’s own.',
  security: [],
  responses: {
    '204': {
      description: 'The server’s tus capabilities.',
      headers: {
        'Tus-Resumable': header('1.0.0'),
        'Tus-Version': header('1.0.0'),
        'Tus-Extension': header('creation, creation-with-upload, termination, expiration, checksum'),
        'Tus-Max-Size': header('max_upload_bytes of GET /v1/limits.', 'integer'),
        'Tus-Checksum-Algorithm': header('sha1,sha256'),
      },
    },
  },
};

/**
 * Every OPTIONS under /v1 is a CORS preflight answered by CorsMiddleware before the key check (a preflight never
 * carries the key), whatever the path; UHP_CORS_ORIGINS decides which origins it allows.
 */
const PREFLIGHT = {
  summary: 'CORS preflight',
  description:
    'Answered before the key check with 204, Access-Control-Allow-Methods (GET, HEAD, POST, PATCH, DELETE, ' +
    'OPTIONS), the allowed request headers and Access-Control-Max-Age; the origin as UHP_CORS_ORIGINS allows.',
  security: [],
  'x-cors-preflight': true,
  responses: { '204': { description: 'Allowed: Access-Control-Allow-* headers.' } },
};

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: ref('Error') } },
});

type Operation = { security?: readonly unknown[]; responses: Record<string, unknown> };

/**
 * What holds for every /v1 route, added here rather than repeated: any of them may meet a bug (500) or a
 * dependency that is down (503 with Retry-After), and each path answers OPTIONS as a CORS preflight.
 */
function withCommonAnswers<T extends Record<string, Record<string, Operation>>>(paths: T) {
  const out: Record<string, Record<string, Operation>> = {};
  for (const [path, item] of Object.entries(paths)) {
    out[path] = Object.fromEntries(
      Object.entries(item).map(([method, operation]) => [
        method,
        method === 'options' ? operation : { ...operation, responses: { ...operation.responses, ...errors(500, 503) } },
      ]),
    );
    // A preflight names no id of its own, but OpenAPI wants every parameter of its path declared.
    const pathParameters = [...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
      name,
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    out[path].options = {
      ...(out[path].options ?? PREFLIGHT),
      ...(pathParameters.length ? { parameters: pathParameters } : {}),
    };
  }
  return out;
}

/** Served on the API port without a key, beside /v1 (docs/api.md §8). */
const OPERATIONS_PATHS = {
  '/healthz': {
    get: {
      summary: 'Liveness: the process answers',
      security: [],
      responses: {
        '200': json({
          type: 'object',
          properties: { status: { const: 'ok' }, dependencies: { type: 'object' } },
        }),
      },
    },
  },
  '/readyz': {
    get: {
      summary: 'Readiness: every dependency answers',
      security: [],
      responses: {
        '200': json({ type: 'object', properties: { status: { const: 'ok' }, checks: { type: 'object' } } }),
        ...errors(503),
      },
    },
  },
  '/metrics': {
    get: {
      summary: 'Prometheus metrics (on this port only with UHP_API_METRICS=true)',
      description: 'Off the API port by default: scrape METRICS_PORT. Elsewhere 404.',
      security: [],
      responses: {
        '200': { description: 'Prometheus text format.', content: { 'text/plain': { schema: { type: 'string' } } } },
        ...errors(404),
      },
    },
  },
  '/openapi.json': {
    get: { summary: 'This OpenAPI document', security: [], responses: { '200': json({ type: 'object' }) } },
  },
  '/docs': {
    get: {
      summary: 'The OpenAPI document, rendered (Swagger UI)',
      security: [],
      responses: { '200': { description: 'HTML.', content: { 'text/html': { schema: { type: 'string' } } } } },
    },
  },
};

/** One message of a response's input, as parseResponseRequest takes it (docs/api.md §4). */
const INPUT_MESSAGE = {
  type: 'object',
  required: ['role', 'content'],
  properties: {
    type: { const: 'message' },
    role: { enum: ['user', 'system', 'developer', 'assistant'] },
    content: {
      oneOf: [
        { type: 'string' },
        {
          type: 'array',
          items: {
            oneOf: [
              {
                type: 'object',
                required: ['type', 'text'],
                properties: { type: { enum: ['input_text', 'output_text'] }, text: { type: 'string' } },
              },
              {
                type: 'object',
                required: ['type'],
                description: 'file_id, or file_data as a base64 data: URL with filename',
                properties: {
                  type: { const: 'input_file' },
                  file_id: { type: 'string' },
                  file_data: { type: 'string' },
                  filename: { type: 'string' },
                },
              },
              {
                type: 'object',
                required: ['type'],
                description: 'file_id, or image_url as a base64 data: URL',
                properties: {
                  type: { const: 'input_image' },
                  file_id: { type: 'string' },
                  image_url: { type: 'string' },
                  detail: { type: 'string' },
                },
              },
            ],
          },
        },
      ],
    },
  },
} as const;

export const OPENAPI_DOCUMENT = {
  openapi: '3.1.0',
  info: {
    title: 'uhp-files',
    version: '2026-08-11',
    description:
      'Files and artifacts of an agent harness (UHP Files 2026-08-11). Authenticate with `Authorization: Bearer ' +
      '<api key>`. Limits are served at GET /v1/limits. Every error is ' +
      '`{"error":{"type","code","message","param"}}`.',
  },
  security: [{ bearer: [] }],
  paths: {
    ...withCommonAnswers({
      '/v1/limits': {
        get: { summary: 'Size limits and preview formats', security: [], responses: { '200': json(ref('Limits')) } },
      },
      '/v1/files': {
        post: {
          summary: 'Upload a file',
          requestBody: uploadBody(true),
          responses: { '200': json(ref('File')), ...errors(400, 401, 413, 415, 429) },
        },
        get: {
          summary: 'List files',
          parameters: [...listParams, { name: 'purpose', in: 'query', schema: { type: 'string' } }],
          responses: { '200': json(list('File')), ...errors(400, 401) },
        },
      },
      '/v1/files/{file_id}': {
        get: {
          summary: 'Get a file',
          parameters: [idParam('file_id', 'file')],
          responses: { '200': json(ref('File')), ...errors(401, 404) },
        },
        delete: {
          summary: 'Delete a file',
          parameters: [idParam('file_id', 'file')],
          responses: { '200': json(deleted('file')), ...errors(401, 404) },
        },
      },
      '/v1/files/{file_id}/content': download('Download a file', [idParam('file_id', 'file')]),
      '/v1/uploads': {
        post: {
          summary: 'Start a resumable upload (OpenAI Uploads API)',
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['filename', 'purpose', 'bytes', 'mime_type'],
                  properties: {
                    filename: { type: 'string' },
                    purpose: { enum: ['assistants', 'batch', 'fine-tune', 'vision', 'user_data', 'evals'] },
                    bytes: { type: 'integer', minimum: 0, description: 'At most max_upload_bytes (413 above).' },
                    mime_type: { type: 'string' },
                    expires_after: {
                      type: 'object',
                      required: ['anchor', 'seconds'],
                      properties: {
                        anchor: { const: 'created_at' },
                        seconds: { type: 'integer', minimum: 3600, maximum: 2592000 },
                      },
                    },
                  },
                },
              },
            },
          },
          responses: { '200': json(ref('Upload')), ...errors(400, 401, 413, 415, 429) },
        },
      },
      '/v1/uploads/{upload_id}': {
        get: {
          summary: 'Get an upload',
          parameters: [idParam('upload_id', 'upload')],
          responses: { '200': json(ref('Upload')), ...errors(401, 404) },
        },
      },
      '/v1/uploads/{upload_id}/parts': {
        post: {
          summary: 'Add a part to an upload',
          parameters: [idParam('upload_id', 'upload')],
          requestBody: {
            required: true,
            content: {
              'multipart/form-data': {
                schema: {
                  type: 'object',
                  required: ['data'],
                  properties: {
                    data: { type: 'string', format: 'binary', description: 'At most 64 MiB, streamed to storage.' },
                  },
                },
              },
            },
          },
          responses: { '200': json(ref('UploadPart')), ...errors(400, 401, 404, 409, 413, 415, 429) },
        },
        get: {
          summary: 'List the parts an upload received',
          parameters: [idParam('upload_id', 'upload')],
          responses: {
            '200': json({
              type: 'object',
              properties: {
                object: { const: 'list' },
                data: { type: 'array', items: ref('UploadPart') },
                has_more: { const: false },
              },
            }),
            ...errors(401, 404),
          },
        },
      },
      '/v1/uploads/{upload_id}/complete': {
        post: {
          summary: 'Complete an upload: its named parts become a file',
          parameters: [idParam('upload_id', 'upload')],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['part_ids'],
                  properties: {
                    part_ids: { type: 'array', items: { type: 'string' }, minItems: 1 },
                    md5: { type: 'string', pattern: '^[0-9a-fA-F]{32}$' },
                  },
                },
              },
            },
          },
          responses: { '200': json(ref('Upload')), ...errors(400, 401, 404, 409, 413, 415) },
        },
      },
      '/v1/uploads/{upload_id}/cancel': {
        post: {
          summary: 'Cancel an upload',
          parameters: [idParam('upload_id', 'upload')],
          responses: { '200': json(ref('Upload')), ...errors(400, 401, 404, 409, 413, 415) },
        },
      },
      '/v1/tus': {
        post: {
          summary: 'tus 1.0: create an upload (creation, creation-with-upload)',
          parameters: [
            { name: 'Tus-Resumable', in: 'header', required: true, schema: { const: '1.0.0' } },
            {
              name: 'Upload-Length',
              in: 'header',
              required: true,
              schema: { type: 'integer', minimum: 0 },
              description: 'At most max_upload_bytes, also sent as Tus-Max-Size (413 file_too_large above).',
            },
            {
              name: 'Upload-Metadata',
              in: 'header',
              schema: { type: 'string' },
              description: 'base64 values of filename, purpose (default user_data), content_type.',
            },
          ],
          responses: {
            '201': { description: 'Created; Location and Upload-Offset.' },
            ...errors(400, 401, 412, 413, 429),
          },
        },
        options: tusDiscovery,
      },
      '/v1/tus/{upload_id}': {
        head: {
          summary: 'tus 1.0: the upload’s offset',
          parameters: [idParam('upload_id', 'upload'), ...TUS_RESUMABLE],
          responses: {
            '200': {
              description:
                'Upload-Offset, Upload-Length, Upload-Metadata, Upload-Expires, Cache-Control: no-store, and ' +
                'X-File-Id once the upload became a file.',
            },
            ...errors(401, 404, 412),
          },
        },
        patch: {
          summary: 'tus 1.0: append bytes at Upload-Offset',
          parameters: [
            idParam('upload_id', 'upload'),
            ...TUS_RESUMABLE,
            { name: 'Upload-Offset', in: 'header', required: true, schema: { type: 'integer', minimum: 0 } },
            {
              name: 'Upload-Checksum',
              in: 'header',
              schema: { type: 'string' },
              description: 'sha1 or sha256, base64.',
            },
          ],
          requestBody: {
            required: true,
            content: { 'application/offset+octet-stream': { schema: { type: 'string', format: 'binary' } } },
          },
          responses: {
            '204': { description: 'Kept; the new Upload-Offset (and X-File-Id once complete).' },
            ...errors(400, 401, 404, 409, 412, 413, 415, 429, 460),
          },
        },
        delete: {
          summary: 'tus 1.0: terminate the upload',
          parameters: [idParam('upload_id', 'upload'), ...TUS_RESUMABLE],
          responses: { '204': { description: 'Terminated; its parts are purged.' }, ...errors(401, 404, 409, 412) },
        },
        options: tusDiscovery,
      },
      '/v1/sessions': {
        post: {
          summary: 'Create a session (with its container)',
          requestBody: {
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  properties: { metadata: { type: 'object', additionalProperties: { type: 'string' } } },
                },
              },
            },
          },
          responses: { '200': json(ref('Session')), ...errors(400, 401, 413, 415) },
        },
        get: {
          summary: 'List sessions',
          parameters: listParams,
          responses: { '200': json(list('Session')), ...errors(400, 401) },
        },
      },
      '/v1/sessions/{session_id}': {
        get: {
          summary: 'Get a session',
          parameters: [idParam('session_id', 'sess')],
          responses: { '200': json(ref('Session')), ...errors(401, 404) },
        },
        delete: {
          summary: 'Delete a session, its containers and artifacts',
          parameters: [idParam('session_id', 'sess')],
          responses: { '200': json(deleted('session.deleted')), ...errors(401, 404) },
        },
      },
      '/v1/sessions/{session_id}/files': {
        get: {
          summary: 'Every artifact of the session, oldest first',
          description: 'Without `limit` the whole listing is streamed; with `limit` (and `after`) it pages.',
          parameters: [idParam('session_id', 'sess'), listParams[0], listParams[1]],
          responses: {
            '200': json({
              type: 'object',
              properties: { files: { type: 'array', items: ref('ContainerFile') }, has_more: { type: 'boolean' } },
            }),
            ...errors(400, 401, 404),
          },
        },
      },
      '/v1/sessions/{session_id}/files/archive': {
        get: {
          summary: 'Every artifact of the session as one ZIP',
          description:
            'One entry per artifact, bytes identical to …/content; entry names are safe relative names, duplicates ' +
            'become `name (2).ext`, UTF-8 names carry the UTF-8 flag, ZIP64 where needed. ' +
            'Built by the worker and cached for the exact set of artifacts: a new or deleted artifact makes the next ' +
            'request build anew. ' +
            'While a build outlasts the wait the answer is 202 with its progress and `Retry-After`; ask again for ' +
            'the 200. An empty session gives a valid empty ZIP.',
          parameters: [
            idParam('session_id', 'sess'),
            { name: 'Range', in: 'header', schema: { type: 'string' } },
            { name: 'If-None-Match', in: 'header', schema: { type: 'string' } },
          ],
          responses: {
            '200': {
              description:
                'The ZIP, with `Content-Disposition: attachment; filename="<session_id>.zip"`, nosniff, CSP sandbox, ' +
                'a strong ETag and Accept-Ranges.',
              content: { 'application/zip': { schema: { type: 'string', format: 'binary' } } },
            },
            '202': {
              description: 'Still being built; retry after `Retry-After` seconds.',
              headers: { 'Retry-After': { schema: { type: 'integer' } } },
              content: {
                'application/json': {
                  schema: {
                    type: 'object',
                    required: ['object', 'status', 'files_done', 'files_total', 'bytes_done', 'bytes_total'],
                    properties: {
                      object: { const: 'session.archive' },
                      status: { const: 'in_progress' },
                      files_done: { type: 'integer' },
                      files_total: { type: 'integer' },
                      bytes_done: { type: 'integer' },
                      bytes_total: { type: 'integer' },
                    },
                  },
                },
              },
            },
            '206': {
              description: 'One byte range of the ZIP.',
              content: { 'application/zip': { schema: { type: 'string', format: 'binary' } } },
            },
            '304': { description: 'Not modified.' },
            ...errors(401, 404, 416, 429, 503),
          },
        },
      },
      '/v1/containers': {
        post: {
          summary: 'Open a new session and return its container',
          requestBody: {
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  properties: { name: { type: 'string' }, file_ids: { type: 'array', items: { type: 'string' } } },
                },
              },
            },
          },
          responses: { '200': json(ref('Container')), ...errors(400, 401, 404, 413, 415) },
        },
        get: {
          summary: 'List containers',
          parameters: listParams,
          responses: { '200': json(list('Container')), ...errors(400, 401) },
        },
      },
      '/v1/containers/{container_id}': {
        get: {
          summary: 'Get a container',
          parameters: [idParam('container_id', 'cntr')],
          responses: { '200': json(ref('Container')), ...errors(401, 404) },
        },
        delete: {
          summary: 'Delete a container and its files',
          parameters: [idParam('container_id', 'cntr')],
          responses: { '200': json(deleted('container.deleted')), ...errors(401, 404) },
        },
      },
      '/v1/containers/{container_id}/files': {
        post: {
          summary: 'Upload a file into the container, or copy an uploaded file in by id',
          parameters: [idParam('container_id', 'cntr')],
          requestBody: {
            required: true,
            content: {
              ...uploadBody(false).content,
              'application/json': {
                schema: { type: 'object', required: ['file_id'], properties: { file_id: { type: 'string' } } },
              },
            },
          },
          responses: { '200': json(ref('ContainerFile')), ...errors(400, 401, 404, 413, 415, 429) },
        },
        get: {
          summary: 'List the container’s files',
          parameters: [idParam('container_id', 'cntr'), ...listParams],
          responses: { '200': json(list('ContainerFile')), ...errors(400, 401, 404) },
        },
      },
      '/v1/containers/{container_id}/files/{file_id}': {
        get: {
          summary: 'Get a container file',
          parameters: [idParam('container_id', 'cntr'), idParam('file_id', 'file')],
          responses: { '200': json(ref('ContainerFile')), ...errors(401, 404) },
        },
        delete: {
          summary: 'Delete a container file',
          parameters: [idParam('container_id', 'cntr'), idParam('file_id', 'file')],
          responses: { '200': json(deleted('container.file.deleted')), ...errors(401, 404) },
        },
      },
      '/v1/containers/{container_id}/files/{file_id}/content': download('Download a container file', [
        idParam('container_id', 'cntr'),
        idParam('file_id', 'file'),
      ]),
      '/v1/containers/{container_id}/files/{file_id}/pdf': {
        get: {
          summary: 'A PDF preview of the file',
          description:
            'Office documents (LibreOffice), HTML, Markdown, text and code (Chromium) and images convert in the ' +
            'worker, once per content (cached); a PDF is served as is. ' +
            '501 preview_unavailable when previews are off or no converter for the format is installed; 502 ' +
            'preview_failed for an unsupported or corrupt file (x-should-retry: false) or a conversion that outlasts ' +
            'PREVIEW_TIMEOUT_MS (retryable).',
          parameters: [idParam('container_id', 'cntr'), idParam('file_id', 'file')],
          responses: {
            '200': {
              description: 'The PDF, inline',
              content: { 'application/pdf': { schema: { type: 'string', format: 'binary' } } },
            },
            ...errors(401, 404, 429, 501, 502, 503),
          },
        },
      },
      '/v1/responses': {
        post: {
          summary: 'Run a task (response) in a session',
          description:
            'Runs the agent (agent, else a model that names one, else the default "report") in the session\'s ' +
            'current container (a new session without session_id). ' +
            'Inputs: a string, or messages whose content holds input_text, input_file (file_data as a base64 data: ' +
            'URL, or file_id) and input_image parts. ' +
            'Everything is checked before anything is written. stream, background, previous_response_id, ' +
            'conversation, prompt, file_url and tools other than code_interpreter are 400 with their param. ' +
            'An agent that fails gives 200 with status "failed", output [] and error. See docs/agents.md.',
          requestBody: {
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['input'],
                  properties: {
                    session_id: { type: 'string' },
                    input: { oneOf: [{ type: 'string' }, { type: 'array', items: INPUT_MESSAGE }] },
                    agent: { enum: ['report', 'http'] },
                    model: { type: 'string' },
                    instructions: { type: 'string' },
                    metadata: { type: 'object', additionalProperties: { type: 'string' } },
                  },
                },
              },
            },
          },
          responses: { '200': json(ref('Response')), ...errors(400, 401, 404, 413, 415, 429) },
        },
      },
      '/v1/responses/{response_id}': {
        get: {
          summary: 'Get a response',
          parameters: [idParam('response_id', 'resp')],
          responses: { '200': json(ref('Response')), ...errors(401, 404) },
        },
      },
    }),
    ...OPERATIONS_PATHS,
  },
  components: {
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    responses: Object.fromEntries(
      [...new Set(Object.values(ERROR_CODES).map((entry) => entry.status))].map((status) => {
        const codes = Object.entries(ERROR_CODES).filter(([, entry]) => entry.status === status);
        const description = codes.map(([code, entry]) => `${code}: ${entry.when}`).join(' ');
        return [`Error${status}`, errorResponse(description)];
      }),
    ),
    schemas: {
      Error: {
        type: 'object',
        required: ['error'],
        properties: {
          error: {
            type: 'object',
            required: ['type', 'code', 'message', 'param'],
            properties: {
              type: { type: 'string' },
              code: { enum: Object.keys(ERROR_CODES) },
              message: { type: 'string' },
              param: { type: ['string', 'null'] },
            },
          },
        },
      },
      Limits: {
        type: 'object',
        description:
          'Every limit as the routes enforce it (one function computes both): exactly the advertised maximum is ' +
          'accepted, one byte more refused.',
        required: [
          'object',
          'max_file_bytes',
          'max_inline_file_bytes',
          'max_request_bytes',
          'max_upload_bytes',
          'max_upload_part_bytes',
          'preview',
          'archive',
          'per_principal',
        ],
        properties: {
          object: { const: 'limits' },
          max_file_bytes: {
            type: 'integer',
            description:
              'Largest file one request streams in: POST /v1/files, POST /v1/containers/{container_id}/files ' +
              '(agents’ artifacts too). The smaller of UHP_MAX_SINGLE_REQUEST_FILE_BYTES and UHP_MAX_FILE_BYTES.',
          },
          max_inline_file_bytes: {
            type: 'integer',
            description:
              'Largest inline file (file_data or image_url as a data: URL in POST /v1/responses), decoded. The ' +
              'smaller of UHP_MAX_INLINE_FILE_BYTES and UHP_MAX_FILE_BYTES.',
          },
          max_request_bytes: {
            type: 'integer',
            description:
              'Largest JSON body (413 request_too_large above): UHP_MAX_REQUEST_BYTES, or when 0 the base64 size ' +
              'of max_inline_file_bytes plus 64 KiB (never less: a smaller value refuses the start).',
          },
          max_upload_bytes: {
            type: 'integer',
            description:
              'Largest file of any kind, and so the largest a resumable upload (POST /v1/uploads bytes, tus ' +
              'Upload-Length) may declare: UHP_MAX_FILE_BYTES. No other file limit exceeds it.',
          },
          max_upload_part_bytes: {
            type: 'integer',
            description: 'Largest part of a POST /v1/uploads upload: the smaller of 64 MiB and max_upload_bytes.',
          },
          preview: {
            type: 'object',
            required: ['enabled', 'formats', 'timeout_ms'],
            properties: {
              enabled: {
                type: 'boolean',
                description: 'Whether any format can be previewed now: PREVIEW_ENABLED and a worker with a converter.',
              },
              formats: {
                type: 'array',
                items: { type: 'string' },
                description: 'The file extensions some worker can convert now (none when previews are off).',
              },
              timeout_ms: {
                type: 'integer',
                description: 'How long GET …/pdf waits for a conversion: PREVIEW_TIMEOUT_MS.',
              },
            },
          },
          archive: {
            type: 'object',
            required: ['formats', 'max_bytes'],
            properties: {
              formats: { type: 'array', items: { type: 'string' }, description: 'Archive formats: zip.' },
              max_bytes: {
                type: 'integer',
                description: 'Largest session archive (ZIP); a larger session’s build fails (503): ARCHIVE_MAX_BYTES.',
              },
            },
          },
          per_principal: {
            type: 'object',
            description: 'What one principal may have at once (429 rate_limited with Retry-After beyond).',
            required: [
              'concurrent_uploads',
              'concurrent_downloads',
              'responses_in_flight',
              'pending_previews',
              'pending_uploads',
              'pending_upload_bytes',
              'archive_builds',
            ],
            properties: {
              concurrent_uploads: {
                type: 'integer',
                description: 'Uploads streaming at once, per gateway process: UHP_MAX_CONCURRENT_UPLOADS.',
              },
              concurrent_downloads: {
                type: 'integer',
                description:
                  'Downloads, previews and archives served at once, per gateway process: UHP_MAX_CONCURRENT_DOWNLOADS.',
              },
              responses_in_flight: {
                type: 'integer',
                description: 'Responses whose agent is running, per gateway process: UHP_MAX_RESPONSES_IN_FLIGHT.',
              },
              pending_previews: {
                type: 'integer',
                description: 'Previews queued or converting: UHP_MAX_PENDING_PREVIEWS.',
              },
              pending_uploads: {
                type: 'integer',
                description: 'Resumable uploads not yet completed or ended: UHP_MAX_PENDING_UPLOADS.',
              },
              pending_upload_bytes: {
                type: 'integer',
                description:
                  'Bytes the parts of pending resumable uploads may hold: UHP_MAX_PENDING_UPLOAD_BYTES, or when 0 ' +
                  'twice max_upload_bytes and at least 1 GiB.',
              },
              archive_builds: {
                type: 'integer',
                description: 'Archive builds queued or running: UHP_MAX_ARCHIVE_BUILDS.',
              },
            },
          },
        },
      },
      File: {
        type: 'object',
        properties: {
          id: { type: 'string' },
          object: { const: 'file' },
          bytes: { type: 'integer' },
          created_at: { type: 'integer' },
          expires_at: { type: ['integer', 'null'] },
          filename: { type: 'string' },
          purpose: { type: 'string' },
          content_type: { type: 'string' },
          sha256: {
            type: ['string', 'null'],
            description: 'Null while status is "uploaded" (a file completed from an upload\'s parts, being hashed).',
          },
          status: {
            enum: ['uploaded', 'processed'],
            description: '"uploaded": completed from parts, downloads work, SHA-256 not measured yet.',
          },
        },
      },
      Upload: {
        type: 'object',
        properties: {
          id: { type: 'string' },
          object: { const: 'upload' },
          bytes: { type: 'integer' },
          created_at: { type: 'integer' },
          expires_at: { type: 'integer' },
          filename: { type: 'string' },
          purpose: { type: 'string' },
          mime_type: { type: 'string' },
          status: { enum: ['pending', 'completed', 'cancelled', 'expired'] },
          file: { oneOf: [ref('File'), { type: 'null' }] },
        },
      },
      UploadPart: {
        type: 'object',
        properties: {
          id: { type: 'string' },
          object: { const: 'upload.part' },
          upload_id: { type: 'string' },
          created_at: { type: 'integer' },
          bytes: { type: 'integer' },
          sha256: { type: 'string' },
        },
      },
      Session: {
        type: 'object',
        properties: {
          id: { type: 'string' },
          object: { const: 'session' },
          container_id: { type: 'string' },
          created_at: { type: 'integer' },
          metadata: { type: 'object' },
        },
      },
      Container: {
        type: 'object',
        properties: {
          id: { type: 'string' },
          object: { const: 'container' },
          session_id: { type: 'string' },
          name: { type: ['string', 'null'] },
          status: { const: 'running' },
          created_at: { type: 'integer' },
        },
      },
      Response: {
        type: 'object',
        properties: {
          id: { type: 'string' },
          object: { const: 'response' },
          status: { enum: ['completed', 'failed'] },
          session_id: { type: 'string' },
          container_id: { type: 'string' },
          agent: { type: 'string' },
          created_at: { type: 'integer' },
          output: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                type: { const: 'message' },
                id: { type: 'string' },
                role: { const: 'assistant' },
                content: {
                  type: 'array',
                  items: {
                    type: 'object',
                    properties: {
                      type: { const: 'output_text' },
                      text: { type: 'string' },
                      annotations: {
                        type: 'array',
                        items: {
                          type: 'object',
                          properties: {
                            type: { const: 'container_file_citation' },
                            container_id: { type: 'string' },
                            file_id: { type: 'string' },
                            filename: { type: 'string' },
                            download_url: { type: 'string', format: 'uri' },
                            start_index: { type: 'integer' },
                            end_index: { type: 'integer' },
                          },
                        },
                      },
                    },
                  },
                },
              },
            },
          },
          error: { type: ['object', 'null'], properties: { code: { type: 'string' }, message: { type: 'string' } } },
          metadata: { type: 'object' },
        },
      },
      ContainerFile: {
        type: 'object',
        properties: {
          id: { type: 'string' },
          object: { const: 'container.file' },
          container_id: { type: 'string' },
          session_id: { type: 'string' },
          filename: { type: 'string' },
          path: { type: 'string' },
          bytes: { type: 'integer' },
          content_type: { type: 'string' },
          created_at: { type: 'integer' },
          source: { enum: ['user', 'assistant'] },
          response_id: { type: ['string', 'null'] },
        },
      },
    },
  },
} as const;
