import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { describe, expect, it } from 'vitest';
import { E2E_BASE_URL, KEYS } from '../support/env';

const client = new OpenAI({ apiKey: KEYS.alice, baseURL: `${E2E_BASE_URL}/v1`, maxRetries: 0 });
const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');

describe('the official openai SDK pointed at the gateway', () => {
  it('files: create, retrieve, auto-paging list, binary content, delete', async () => {
    const data = randomBytes(123_456);
    const created = await client.files.create({ file: await toFile(data, 'sdk-upload.bin'), purpose: 'assistants' });
    expect(created).toMatchObject({
      object: 'file',
      filename: 'sdk-upload.bin',
      bytes: 123_456,
      purpose: 'assistants',
    });
    expect((created as unknown as { sha256: string }).sha256).toBe(sha(data));
    expect((await client.files.retrieve(created.id)).id).toBe(created.id);
    for (let i = 0; i < 3; i++)
      await client.files.create({
        file: await toFile(Buffer.from(`page ${i}`), `sdk-page-${i}.txt`),
        purpose: 'user_data',
      });
    const seen: string[] = [];
    for await (const file of client.files.list({ limit: 2 })) seen.push(file.id);
    expect(seen).toContain(created.id);
    expect(new Set(seen).size).toBe(seen.length);
    const content = await client.files.content(created.id);
    expect(Buffer.from(await content.arrayBuffer()).equals(data)).toBe(true);
    expect(await client.files.delete(created.id)).toMatchObject({ id: created.id, deleted: true });
    await expect(client.files.retrieve(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('containers.files: create by upload and by file_id, list, retrieve, content, delete', async () => {
    const container = await client.containers.create({ name: 'sdk-container' });
    expect(container).toMatchObject({ object: 'container', name: 'sdk-container' });
    const data = randomBytes(4096);
    const uploaded = await client.containers.files.create(container.id, { file: await toFile(data, 'artifact.bin') });
    expect(uploaded).toMatchObject({
      object: 'container.file',
      container_id: container.id,
      bytes: 4096,
      path: '/mnt/data/artifact.bin',
      source: 'user',
    });
    const input = await client.files.create({
      file: await toFile(Buffer.from('copied'), 'copied.txt'),
      purpose: 'user_data',
    });
    const copied = await client.containers.files.create(container.id, { file_id: input.id });
    expect(copied.id).not.toBe(input.id);
    const listed: string[] = [];
    for await (const file of client.containers.files.list(container.id, { limit: 1, order: 'asc' }))
      listed.push(file.id);
    expect(listed).toEqual([uploaded.id, copied.id]);
    expect((await client.containers.files.retrieve(uploaded.id, { container_id: container.id })).bytes).toBe(4096);
    const content = await client.containers.files.content.retrieve(uploaded.id, { container_id: container.id });
    expect(Buffer.from(await content.arrayBuffer()).equals(data)).toBe(true);
    await client.containers.files.delete(uploaded.id, { container_id: container.id });
    await expect(client.containers.files.retrieve(uploaded.id, { container_id: container.id })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    const containers: string[] = [];
    for await (const c of client.containers.list({ limit: 100 })) containers.push(c.id);
    expect(containers).toContain(container.id);
    await client.containers.delete(container.id);
    await expect(client.containers.retrieve(container.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('responses.create: inline and file_id inputs, typed container_file_citation, the cited file downloaded', async () => {
    const inline = Buffer.from('name,score\nada,3\n');
    const byId = randomBytes(20_000);
    const uploaded = await client.files.create({ file: await toFile(byId, 'sdk-input.bin'), purpose: 'user_data' });
    const response = await client.responses.create({
      model: 'report',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Summarise both files.' },
            {
              type: 'input_file',
              filename: 'scores.csv',
              file_data: `data:text/csv;base64,${inline.toString('base64')}`,
            },
            { type: 'input_file', file_id: uploaded.id },
          ],
        },
      ],
    });
    expect(response.status).toBe('completed');
    expect(response.output_text).toContain('report.md');
    const message = response.output.find((item) => item.type === 'message');
    if (message?.type !== 'message') throw new Error('no message in output');
    const part = message.content[0];
    if (part.type !== 'output_text') throw new Error('no output_text');
    const citation = part.annotations.find((a) => a.type === 'container_file_citation');
    if (citation?.type !== 'container_file_citation') throw new Error('no container_file_citation');
    expect(citation.filename).toBe('report.md');
    expect(part.text.slice(citation.start_index, citation.end_index)).toBe('report.md');
    const content = await client.containers.files.content.retrieve(citation.file_id, {
      container_id: citation.container_id,
    });
    const report = Buffer.from(await content.arrayBuffer()).toString('utf8');
    expect(report).toContain(`- scores.csv: ${inline.length} bytes, sha256 ${sha(inline)}`);
    expect(report).toContain(`- sdk-input.bin: ${byId.length} bytes, sha256 ${sha(byId)}`);
    const refused = await client.responses
      .create({ model: 'report', input: 'x', previous_response_id: response.id })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('previous_response_id');
  });

  it('raises typed errors: bad key, oversized upload', async () => {
    const stranger = new OpenAI({ apiKey: 'sk_nobody_0123456789', baseURL: `${E2E_BASE_URL}/v1`, maxRetries: 0 });
    await expect(stranger.files.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    const error = await client.files
      .create({ file: await toFile(randomBytes(4 * 1024 * 1024 + 1), 'too-big.bin'), purpose: 'user_data' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(413);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('file_too_large');
  });

  // Once in two runs the cap's abort raced the gateway's read of storage's answer: 503 (which the SDK retries,
  // re-sending the body) instead of 413. A file stream is sent chunked, so only counting can refuse it.
  it('answers 413 to oversized chunked uploads from file streams, every time, also many at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'uhp-sdk-'));
    const path = join(dir, 'too-big.bin');
    writeFileSync(path, randomBytes(4 * 1024 * 1024 + 1));
    try {
      for (let round = 0; round < 3; round++) {
        const outcomes = await Promise.all(
          Array.from({ length: 8 }, () =>
            client.files
              .create({ file: createReadStream(path), purpose: 'user_data' })
              .then(() => 'accepted')
              .catch((e: InstanceType<typeof OpenAI.APIError>) => `${e.status} ${e.code}`),
          ),
        );
        expect(outcomes).toEqual(Array(8).fill('413 file_too_large'));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
