import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, type ApiResponse, fileForm } from '../support/api';
import { count, dbNow, leftoversSince } from '../support/db';
import { agentPort, KEYS, testPort } from '../support/env';
import { unfinishedUploads } from '../support/s3';
import { Stack } from '../support/stack';
import { callWithToken, TestAgentService } from '../support/test-agent';

/**
 * UHP_MAX_FILE_BYTES caps the largest file on every way a file is created; the single-request and
 * inline limits only lower it on their own ways. Each way is driven to its limit (a file of exactly
 * that many bytes is kept) and one byte past it (413 file_too_large, and nothing is kept).
 */
const MiB = 1024 * 1024;
/** Above the 5 MiB of an S3 part, so a resumable upload of it holds a block and a small last part. */
const FILE_LIMIT = 6 * MiB;
const PART_BYTES = 5 * MiB;

interface EffectiveLimits {
  singleRequest: number;
  inline: number;
  anyFile: number;
}

/** What became of one attempt: the file's size when one was kept, else the refusal. */
type Outcome = { status: 200; bytes: number } | { status: number; code: string; param: string | null };

const refusal = (status: number, json: any): Outcome => ({
  status,
  code: json?.error?.code ?? '',
  param: json?.error?.param ?? null,
});
const answered = (res: ApiResponse, bytesOf: (json: any) => number): Outcome =>
  res.status === 200 ? { status: 200, bytes: bytesOf(res.json) } : refusal(res.status, res.json);

const tusHeaders = { authorization: `Bearer ${KEYS.alice}`, 'tus-resumable': '1.0.0' };

interface Way {
  name: string;
  /** Which effective limit holds on this way. */
  limit: keyof EffectiveLimits;
  /** The param a refusal names. */
  param: string;
  create(bytes: number): Promise<Outcome>;
}

function waysThrough(base: string, agent: TestAgentService): Way[] {
  return [
    {
      name: 'POST /v1/files',
      limit: 'singleRequest',
      param: 'file',
      create: async (bytes) =>
        answered(
          await api('POST', '/v1/files', { base, form: fileForm('limit.bin', randomBytes(bytes)) }),
          (file) => file.bytes,
        ),
    },
    {
      name: 'POST /v1/containers/{id}/files (multipart)',
      limit: 'singleRequest',
      param: 'file',
      create: async (bytes) => {
        const session = (await api('POST', '/v1/sessions', { base, json: {} })).json;
        return answered(
          await api('POST', `/v1/containers/${session.container_id}/files`, {
            base,
            form: fileForm('limit.bin', randomBytes(bytes)),
          }),
          (file) => file.bytes,
        );
      },
    },
    {
      name: 'an artifact an http agent uploads with its task token',
      limit: 'singleRequest',
      param: 'file',
      create: async (bytes) => {
        let outcome: Outcome | undefined;
        agent.behave(async (task) => {
          const res = await callWithToken(task, task.api.container_files_url, {
            method: 'POST',
            body: fileForm('artifact.bin', randomBytes(bytes)),
          });
          const json = (await res.json()) as { bytes: number };
          outcome = res.status === 200 ? { status: 200, bytes: json.bytes } : refusal(res.status, json);
          return { body: { text: 'Wrote artifact.bin.' } };
        });
        const response = await api('POST', '/v1/responses', { base, json: { agent: 'http', input: 'write it' } });
        expect(response.status).toBe(200);
        return outcome!;
      },
    },
    {
      name: 'inline file_data in POST /v1/responses',
      limit: 'inline',
      param: 'input[0].content[1].file_data',
      create: async (bytes) => {
        const filename = `inline-${randomUUID()}.bin`;
        const since = await dbNow();
        const res = await api('POST', '/v1/responses', {
          base,
          json: {
            input: [
              {
                role: 'user',
                content: [
                  { type: 'input_text', text: 'Summarise.' },
                  {
                    type: 'input_file',
                    filename,
                    file_data: `data:application/octet-stream;base64,${randomBytes(bytes).toString('base64')}`,
                  },
                ],
              },
            ],
          },
        });
        if (res.status !== 200) return refusal(res.status, res.json);
        expect(res.json.status).toBe('completed');
        const kept = await count('SELECT bytes FROM files WHERE created_at >= $1 AND filename = $2', [since, filename]);
        return { status: 200, bytes: kept };
      },
    },
    {
      name: 'POST /v1/uploads (Uploads API), then its parts and complete',
      limit: 'anyFile',
      param: 'bytes',
      create: async (bytes) => {
        const created = await api('POST', '/v1/uploads', {
          base,
          json: { filename: 'limit.bin', purpose: 'user_data', bytes, mime_type: 'application/octet-stream' },
        });
        if (created.status !== 200) return refusal(created.status, created.json);
        const data = randomBytes(bytes);
        const partIds: string[] = [];
        for (let offset = 0; offset < bytes; offset += PART_BYTES) {
          const form = new FormData();
          form.append('data', new Blob([data.subarray(offset, offset + PART_BYTES)]), 'part');
          const part = await api('POST', `/v1/uploads/${created.json.id}/parts`, { base, form });
          expect(part.status).toBe(200);
          partIds.push(part.json.id);
        }
        return answered(
          await api('POST', `/v1/uploads/${created.json.id}/complete`, { base, json: { part_ids: partIds } }),
          (upload) => upload.file.bytes,
        );
      },
    },
    {
      name: 'tus: POST /v1/tus with Upload-Length, then one PATCH',
      limit: 'anyFile',
      param: 'Upload-Length',
      create: async (bytes) => {
        const created = await fetch(`${base}/v1/tus`, {
          method: 'POST',
          headers: {
            ...tusHeaders,
            'upload-length': String(bytes),
            'upload-metadata': `filename ${Buffer.from('limit.bin').toString('base64')}`,
          },
        });
        if (created.status !== 201) return refusal(created.status, await created.json());
        const patched = await fetch(created.headers.get('location')!, {
          method: 'PATCH',
          headers: { ...tusHeaders, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
          body: randomBytes(bytes),
        });
        expect(patched.status).toBe(204);
        const file = await api('GET', `/v1/files/${patched.headers.get('x-file-id')}`, { base });
        return answered(file, (kept) => kept.bytes);
      },
    },
  ];
}

/** A stack with these limits: /v1/limits says them, and every way holds to its own. */
function describeLimits(title: string, portBase: number, env: Record<string, string>, limits: EffectiveLimits) {
  describe(title, () => {
    const stack = new Stack(portBase, env);
    const agent = new TestAgentService(agentPort(portBase));
    beforeAll(async () => {
      await agent.start();
      await stack.start(['storage', 'gateway']);
    });
    afterAll(async () => {
      await stack.stop();
      await agent.stop();
    });

    it('GET /v1/limits and tus OPTIONS report the limits in effect', async () => {
      const served = await api('GET', '/v1/limits', { who: 'anon', base: stack.baseUrl });
      expect(served.json).toMatchObject({
        max_file_bytes: limits.singleRequest,
        max_inline_file_bytes: limits.inline,
        max_upload_bytes: limits.anyFile,
        // A part larger than any upload could never complete.
        max_upload_part_bytes: Math.min(64 * MiB, limits.anyFile),
      });
      const options = await fetch(`${stack.baseUrl}/v1/tus`, { method: 'OPTIONS' });
      expect(options.headers.get('tus-max-size')).toBe(String(limits.anyFile));
    });

    const ways = waysThrough(stack.baseUrl, agent);
    it.each(ways.map((way) => [way.name, way] as const))('%s: keeps a file at its limit', async (_name, way) => {
      expect(await way.create(limits[way.limit])).toEqual({ status: 200, bytes: limits[way.limit] });
    });

    it.each(ways.map((way) => [way.name, way] as const))(
      '%s: one byte over its limit is 413 file_too_large and keeps nothing',
      async (_name, way) => {
        const since = await dbNow();
        const unfinishedBefore = new Set(await unfinishedUploads());
        expect(await way.create(limits[way.limit] + 1)).toEqual({
          status: 413,
          code: 'file_too_large',
          param: way.param,
        });
        expect(await leftoversSince(since)).toEqual({ objects: 0, files: 0, containerFiles: 0 });
        expect(await count('SELECT count(*) FROM uploads WHERE created_at >= $1', [since])).toBe(0);
        expect((await unfinishedUploads()).filter((upload) => !unfinishedBefore.has(upload))).toEqual([]);
      },
    );
  });
}

/**
 * The pending-upload bytes a principal may hold derive from UHP_MAX_FILE_BYTES (twice it): this file's
 * small file limit would count the pending uploads other test files left in the shared database.
 */
const PENDING_BYTES_OF_OTHER_FILES = { UHP_MAX_PENDING_UPLOAD_BYTES: String(1024 ** 4) };

describeLimits(
  'UHP_MAX_FILE_BYTES below the single-request and inline limits: it caps every way',
  testPort(20080),
  {
    UHP_MAX_FILE_BYTES: String(FILE_LIMIT),
    UHP_MAX_SINGLE_REQUEST_FILE_BYTES: String(8 * MiB),
    UHP_MAX_INLINE_FILE_BYTES: String(8 * MiB),
    ...PENDING_BYTES_OF_OTHER_FILES,
  },
  { singleRequest: FILE_LIMIT, inline: FILE_LIMIT, anyFile: FILE_LIMIT },
);

describeLimits(
  'a smaller single-request limit: one request stops there, resumable uploads still take UHP_MAX_FILE_BYTES',
  testPort(20180),
  {
    UHP_MAX_FILE_BYTES: String(FILE_LIMIT),
    UHP_MAX_SINGLE_REQUEST_FILE_BYTES: String(MiB),
    UHP_MAX_INLINE_FILE_BYTES: String(2 * MiB),
    ...PENDING_BYTES_OF_OTHER_FILES,
  },
  { singleRequest: MiB, inline: 2 * MiB, anyFile: FILE_LIMIT },
);
