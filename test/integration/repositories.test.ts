import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@app/contracts';
import {
  ContainerFileRepository,
  ContainerRepository,
  FileRepository,
  MaintenanceRepository,
  PrincipalRepository,
  ResponseRepository,
  SessionRepository,
  StoredObjectRepository,
  type Db,
} from '@app/db';
import { PrismaService } from '@app/db/prisma';
import { TEST_DATABASE_URL } from '../support/env';

const prisma = new PrismaService(TEST_DATABASE_URL, 4);
const principals = new PrincipalRepository(prisma);
const objects = new StoredObjectRepository(prisma);
const files = new FileRepository(prisma);
const sessions = new SessionRepository(prisma);
const containers = new ContainerRepository(prisma);
const containerFiles = new ContainerFileRepository(prisma);
const responses = new ResponseRepository(prisma);
const maintenance = new MaintenanceRepository(prisma);
/** Runs `fn` in one transaction with repositories bound to it, as a unit of work does. */
const inTx = <T>(fn: (tx: Db) => Promise<T>) => prisma.$transaction((tx) => fn(tx));

let alice: string;
let bob: string;

async function readyObject(principalId: string) {
  const object = await objects.createUploading(principalId);
  await objects.markReady(principalId, object.id, 3, 'ab'.repeat(32));
  return object;
}

async function newFile(principalId: string, extra: Partial<{ expiresAt: Date }> = {}) {
  const object = await readyObject(principalId);
  return inTx((tx) =>
    new FileRepository(tx).create(principalId, {
      id: newId('file'),
      objectId: object.id,
      filename: 'x.txt',
      bytes: 3,
      contentType: 'text/plain',
      sha256: 'ab'.repeat(32),
      purpose: 'user_data',
      createdAt: new Date(),
      expiresAt: extra.expiresAt ?? null,
    }),
  );
}

async function newSession(principalId: string) {
  const ids = { sessionId: newId('session'), containerId: newId('container') };
  await inTx(async (tx) => {
    await new SessionRepository(tx).create(principalId, {
      id: ids.sessionId,
      currentContainerId: ids.containerId,
      metadata: {},
    });
    await new ContainerRepository(tx).create(principalId, {
      id: ids.containerId,
      sessionId: ids.sessionId,
      name: null,
    });
  });
  return ids;
}

beforeAll(async () => {
  alice = (await principals.ensureKey(`alice-${randomUUID()}`, randomUUID(), 'sk_a', null)).id;
  bob = (await principals.ensureKey(`bob-${randomUUID()}`, randomUUID(), 'sk_b', null)).id;
});
afterAll(() => prisma.$disconnect());

describe('repositories against the real Postgres', () => {
  it('keys: ensureKey is idempotent, a revoked key finds no principal', async () => {
    const name = `carol-${randomUUID()}`;
    const hash = randomUUID();
    const first = await principals.ensureKey(name, hash, 'sk_c_pref', 'test');
    const second = await principals.ensureKey(name, hash, 'sk_c_pref', 'test');
    expect(second.id).toBe(first.id);
    expect((await principals.findByKeyHash(hash))?.name).toBe(name);
    expect(await principals.revoke('sk_c_pref')).toBe(1);
    expect(await principals.findByKeyHash(hash)).toBeNull();
    await expect(principals.ensureKey(`dave-${randomUUID()}`, hash, 'x', null)).rejects.toThrow(/another principal/);
  });

  it('files are visible to their principal only, and not once expired', async () => {
    const file = await newFile(alice);
    expect((await files.findForOwner(alice, file.id))?.id).toBe(file.id);
    expect(await files.findForOwner(bob, file.id)).toBeNull();
    const expired = await newFile(alice, { expiresAt: new Date(Date.now() - 1000) });
    expect(await files.findForOwner(alice, expired.id)).toBeNull();
    const page = await files.listForOwner(bob, { limit: 1000, order: 'desc' });
    expect(page.items.map((f) => f.id)).not.toContain(file.id);
  });

  it('reference counts: retain and release, PURGING at zero, never negative', async () => {
    const object = await readyObject(alice);
    expect(await objects.retain(alice, object.id)).toBe(true);
    expect(await inTx((tx) => new StoredObjectRepository(tx).release([object.id]))).toEqual([]);
    expect(await inTx((tx) => new StoredObjectRepository(tx).release([object.id]))).toEqual([object.id]);
    const row = await objects.find(object.id);
    expect(row).toMatchObject({ status: 'PURGING', refCount: 0 });
    expect(await objects.retain(alice, object.id)).toBe(false);
    await expect(inTx((tx) => new StoredObjectRepository(tx).release([object.id]))).rejects.toThrow(
      /more references than held/,
    );
    expect(await objects.finishPurge(object.id)).toBe(true);
    expect(await objects.find(object.id)).toBeNull();
  });

  it('keeps a purged object as a tombstone while deleted rows point at it, then prunes both', async () => {
    const file = await newFile(alice);
    const released = await inTx(async (tx) =>
      new StoredObjectRepository(tx).release([(await new FileRepository(tx).markDeleted(alice, file.id))!]),
    );
    expect(released).toEqual([file.objectId]);
    expect(await files.markDeleted(alice, file.id)).toBeNull();
    expect(await objects.finishPurge(file.objectId)).toBe(true);
    expect((await objects.find(file.objectId))?.status).toBe('PURGED');
    await maintenance.pruneDeletedRows(new Date(Date.now() + 60_000));
    expect(await objects.find(file.objectId)).toBeNull();
  });

  it('release counts an object listed twice twice', async () => {
    const object = await readyObject(alice);
    await objects.retain(alice, object.id);
    expect(await objects.release([object.id, object.id])).toEqual([object.id]);
  });

  it('expireDue marks due files deleted and hands back their objects', async () => {
    const due = await newFile(alice, { expiresAt: new Date(Date.now() - 5000) });
    const released = await files.expireDue(new Date(), 10_000);
    expect(released).toContain(due.objectId);
    expect(await files.expireDue(new Date(), 10_000)).not.toContain(due.objectId);
  });

  it('session deletion takes its containers and artifacts, scoped to the owner', async () => {
    const ids = await newSession(alice);
    const object = await readyObject(alice);
    await inTx((tx) =>
      new ContainerFileRepository(tx).create(alice, {
        id: newId('file'),
        sessionId: ids.sessionId,
        containerId: ids.containerId,
        objectId: object.id,
        filename: 'a.txt',
        bytes: 3,
        contentType: 'text/plain',
        sha256: 'ab'.repeat(32),
        source: 'user',
        responseId: null,
        createdAt: new Date(),
      }),
    );
    expect(await sessions.markDeleted(bob, ids.sessionId)).toBe(false);
    expect(await containerFiles.markDeletedInSession(bob, ids.sessionId)).toEqual([]);
    expect(await sessions.markDeleted(alice, ids.sessionId)).toBe(true);
    expect(await sessions.markDeleted(alice, ids.sessionId)).toBe(false);
    await containers.markDeletedInSession(alice, ids.sessionId);
    expect(await containerFiles.markDeletedInSession(alice, ids.sessionId)).toEqual([object.id]);
    expect(await containerFiles.markDeletedInSession(alice, ids.sessionId)).toEqual([]);
    expect(await containers.findForOwner(alice, ids.containerId)).toBeNull();
    expect((await containerFiles.listSessionArtifacts(alice, ids.sessionId, undefined, 10)).items).toEqual([]);
  });

  it('a session listing read on the pg pool has the same rows and types as the Prisma read, page by page', async () => {
    const ids = await newSession(alice);
    const object = await readyObject(alice);
    for (const [i, source] of (['user', 'assistant', 'user'] as const).entries())
      await inTx((tx) =>
        new ContainerFileRepository(tx).create(alice, {
          id: newId('file'),
          sessionId: ids.sessionId,
          containerId: ids.containerId,
          objectId: object.id,
          filename: `ré "${i}".txt`,
          bytes: 2 ** 40 + i,
          contentType: 'text/plain',
          sha256: i === 1 ? null : 'ab'.repeat(32),
          source,
          responseId: null,
          createdAt: new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678)),
        }),
      );
    const viaPrisma = (await containerFiles.listSessionArtifactObjects(alice, ids.sessionId, undefined, 10)).items;
    const first = await containerFiles.listSessionArtifacts(alice, ids.sessionId, undefined, 2);
    const rest = await containerFiles.listSessionArtifacts(alice, ids.sessionId, first.items.at(-1)!.seq, 2);
    expect(first.hasMore).toBe(true);
    expect(rest.hasMore).toBe(false);
    expect([...first.items, ...rest.items]).toEqual(viaPrisma.map(({ storageKey: _key, ...listing }) => listing));
    expect(first.items[0]).toMatchObject({ bytes: 2n ** 40n, createdAt: new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678)) });
    expect((await containerFiles.listSessionArtifacts(bob, ids.sessionId, undefined, 10)).items).toEqual([]);
  });

  it('another principal cannot take a reference on an object', async () => {
    const object = await readyObject(alice);
    expect(await objects.retain(bob, object.id)).toBe(false);
    expect((await objects.find(object.id))?.refCount).toBe(1);
  });

  describe('responses and task tokens', () => {
    async function startResponse(deadlineInMs = 60_000) {
      const ids = await newSession(alice);
      const tokenHash = randomUUID();
      const response = await inTx((tx) =>
        new ResponseRepository(tx).create(alice, {
          id: newId('response'),
          ...ids,
          agent: 'http',
          inputFileIds: ['file_in'],
          metadata: {},
          taskTokenHash: tokenHash,
          deadlineAt: new Date(Date.now() + deadlineInMs),
          createdAt: new Date(),
        }),
      );
      return { ids, tokenHash, response };
    }

    it('a task token reaches its container and inputs while the response runs, and dies when it ends', async () => {
      const { ids, tokenHash, response } = await startResponse();
      expect(await responses.findTaskScope(tokenHash)).toEqual({
        principalId: alice,
        responseId: response.id,
        sessionId: ids.sessionId,
        containerId: ids.containerId,
        inputFileIds: ['file_in'],
      });
      expect(await responses.findForOwner(bob, response.id)).toBeNull();
      expect(
        await responses.finish(bob, response.id, { status: 'failed', error: { code: 'x', message: 'y' } }),
      ).toBeNull();
      const done = await responses.finish(alice, response.id, {
        status: 'completed',
        output: { message_id: 'msg_1', text: 't', citations: [] },
      });
      expect(done).toMatchObject({ status: 'completed', output: { text: 't' } });
      expect(await responses.findTaskScope(tokenHash)).toBeNull();
      expect(
        await responses.finish(alice, response.id, { status: 'failed', error: { code: 'x', message: 'y' } }),
      ).toBeNull();
    });

    it('a task token dies at its deadline, with its session or with its container', async () => {
      const late = await startResponse(-1);
      expect(await responses.findTaskScope(late.tokenHash)).toBeNull();
      const deleted = await startResponse();
      await sessions.markDeleted(alice, deleted.ids.sessionId);
      expect(await responses.findTaskScope(deleted.tokenHash)).toBeNull();
      expect(await responses.findForOwner(alice, deleted.response.id)).toBeNull();
      const replaced = await startResponse();
      await containers.markDeleted(alice, replaced.ids.containerId);
      expect(await responses.findTaskScope(replaced.tokenHash)).toBeNull();
    });

    it('the sweeper fails responses left in progress past their deadline', async () => {
      const overdue = await startResponse(-120_000);
      const running = await startResponse();
      expect(
        await responses.failOverdue(new Date(Date.now() - 60_000), { code: 'interrupted', message: 'gone' }),
      ).toBeGreaterThanOrEqual(1);
      expect(await responses.findForOwner(alice, overdue.response.id)).toMatchObject({
        status: 'failed',
        error: { code: 'interrupted' },
      });
      expect((await responses.findForOwner(alice, running.response.id))?.status).toBe('in_progress');
    });
  });
});
