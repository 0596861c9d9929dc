import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { PrincipalRepository } from '@app/db';
import { PrismaService } from '@app/db/prisma';
import { hashApiKey } from '../../apps/gateway/src/auth/api-key';
import { runKeysCommand } from '../../apps/gateway/src/cli/keys';
import { TEST_DATABASE_URL } from '../support/env';

const prisma = new PrismaService(TEST_DATABASE_URL, 2);
const principals = new PrincipalRepository(prisma);
afterAll(() => prisma.$disconnect());

async function run(...args: string[]) {
  const lines: string[] = [];
  const code = await runKeysCommand(args, principals, (line) => lines.push(line));
  return { code, lines };
}

describe('keys CLI', () => {
  it('creates a key that authenticates, lists it without the secret, and revokes it', async () => {
    const name = `ops-${randomUUID().slice(0, 8)}`;
    const created = await run('create', name, '--label', 'laptop');
    expect(created.code).toBe(0);
    const key = created.lines[0];
    expect(key).toMatch(/^sk_uhp_[A-Za-z0-9_-]{32}$/);
    expect((await principals.findByKeyHash(hashApiKey(key)))?.name).toBe(name);
    const listed = await run('list', name);
    expect(listed.lines).toHaveLength(2);
    expect(listed.lines[1]).toContain('laptop');
    expect(listed.lines.join('\n')).not.toContain(key);
    const id = listed.lines[1].split('\t')[0];
    expect((await run('revoke', id)).code).toBe(0);
    expect(await principals.findByKeyHash(hashApiKey(key))).toBeNull();
    expect((await run('revoke', id)).code).toBe(1);
  });

  it('keeps one principal and one key when many processes ensure the same ones at once (replicas starting)', async () => {
    const name = `twins-${randomUUID()}`;
    const hash = hashApiKey(`sk_${randomUUID()}`);
    const clients = Array.from({ length: 8 }, () => new PrismaService(TEST_DATABASE_URL, 1));
    try {
      const rows = await Promise.all(
        clients.map((client) => new PrincipalRepository(client).ensureKey(name, hash, 'sk_t', 'boot', 'bootstrap')),
      );
      expect(new Set(rows.map((row) => row.id)).size).toBe(1);
      expect((await run('list', name)).lines).toHaveLength(2);
    } finally {
      await Promise.all(clients.map((client) => client.$disconnect()));
    }
  });

  it('refuses bad input with the usage', async () => {
    expect((await run('create', 'has space')).code).toBe(2);
    expect((await run('frobnicate')).lines[0]).toMatch(/^usage/);
  });

  it('refuses to revoke by a prefix that several live keys share; by id it revokes exactly one', async () => {
    const name = `ops-${randomUUID().slice(0, 8)}`;
    const prefix = `sk_${randomUUID().slice(0, 5)}`;
    const hashes = [randomUUID(), randomUUID()];
    for (const hash of hashes) await principals.ensureKey(name, hash, prefix, 'twin');
    const refused = await run('revoke', prefix);
    expect(refused.code).toBe(2);
    expect(refused.lines[0]).toMatch(/matches 2 live keys/);
    for (const hash of hashes) expect(await principals.findByKeyHash(hash)).not.toBeNull();
    const id = (await run('list', name)).lines[1].split('\t')[0];
    expect((await run('revoke', id)).code).toBe(0);
    expect((await run('revoke', prefix)).code).toBe(0);
    for (const hash of hashes) expect(await principals.findByKeyHash(hash)).toBeNull();
  });
});
