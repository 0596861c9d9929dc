import { createHash, randomBytes } from 'node:crypto';
import OpenAI, { toFile } from 'openai';
import { describe, expect, it } from 'vitest';
import { E2E_BASE_URL, KEYS } from '../support/env';

const client = new OpenAI({ apiKey: KEYS.alice, baseURL: `${E2E_BASE_URL}/v1`, maxRetries: 0 });
const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');

describe('the official openai SDK pointed at the gateway', () => {
  it('files: create, retrieve, auto-paging list, binary content, delete', async () => {
    const data = randomBytes(123_456);
    const created = await client.files.create({ file: await toFile(data, 'sdk-upload.bin'), purpose: 'assistants' });
    expect(created).toMatchObject({ object: 'file', filename: 'sdk-upload.bin', bytes: 123_456, purpose: 'assistants' });
    expect((created as unknown as { sha256: string }).sha256).toBe(sha(data));
    expect((await client.files.retrieve(created.id)).id).toBe(created.id);
    for (let i = 0; i < 3; i++) await client.files.create({ file: await toFile(Buffer.from(`page ${i}`), `sdk-page-${i}.txt`), purpose: 'user_data' });
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
    expect(uploaded).toMatchObject({ object: 'container.file', container_id: container.id, bytes: 4096, path: '/mnt/data/artifact.bin', source: 'user' });
    const input = await client.files.create({ file: await toFile(Buffer.from('copied'), 'copied.txt'), purpose: 'user_data' });
    const copied = await client.containers.files.create(container.id, { file_id: input.id });
    expect(copied.id).not.toBe(input.id);
    const listed: string[] = [];
    for await (const file of client.containers.files.list(container.id, { limit: 1, order: 'asc' })) listed.push(file.id);
    expect(listed).toEqual([uploaded.id, copied.id]);
    expect((await client.containers.files.retrieve(uploaded.id, { container_id: container.id })).bytes).toBe(4096);
    const content = await client.containers.files.content.retrieve(uploaded.id, { container_id: container.id });
    expect(Buffer.from(await content.arrayBuffer()).equals(data)).toBe(true);
    await client.containers.files.delete(uploaded.id, { container_id: container.id });
    await expect(client.containers.files.retrieve(uploaded.id, { container_id: container.id })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const containers: string[] = [];
    for await (const c of client.containers.list({ limit: 100 })) containers.push(c.id);
    expect(containers).toContain(container.id);
    await client.containers.delete(container.id);
    await expect(client.containers.retrieve(container.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('raises typed errors: bad key, oversized upload', async () => {
    const stranger = new OpenAI({ apiKey: 'sk_nobody_0123456789', baseURL: `${E2E_BASE_URL}/v1`, maxRetries: 0 });
    await expect(stranger.files.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    const error = await client.files.create({ file: await toFile(randomBytes(4 * 1024 * 1024 + 1), 'too-big.bin'), purpose: 'user_data' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(413);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('file_too_large');
  });
});
