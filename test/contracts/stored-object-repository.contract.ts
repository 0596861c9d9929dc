import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ReferenceCountError, type StoredObjectRepository } from '@app/db';
import { eachSubject, SHA, type SubjectFactory } from './subject';

/** What the unit of work and the object stager rely on from StoredObjectRepository. */
export function storedObjectRepositoryContract(subject: SubjectFactory<StoredObjectRepository>) {
  describe('StoredObjectRepository contract', () => {
    const current = eachSubject(subject);

    it('creates an upload in progress with no references, under a key of its own or the one given', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const object = await repo.createUploading(principal);
      expect(object).toMatchObject({
        principalId: principal,
        status: 'UPLOADING',
        refCount: 0,
        bytes: 0n,
        sha256: null,
      });
      expect(object.storageKey).toBeTruthy();
      const key = `contracts/${randomUUID()}`;
      expect((await repo.createUploading(principal, key)).storageKey).toBe(key);
      expect(await repo.find(object.id)).toEqual(object);
      expect(await repo.find(randomUUID())).toBeNull();
    });

    it('markReady takes the first reference once, only for the uploading principal', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const object = await repo.createUploading(principal);
      await expect(repo.markReady(seed.principal(), object.id, 3, SHA)).rejects.toBeInstanceOf(ReferenceCountError);
      await repo.markReady(principal, object.id, 3, SHA);
      expect(await repo.find(object.id)).toMatchObject({ status: 'READY', refCount: 1, bytes: 3n, sha256: SHA });
      await expect(repo.markReady(principal, object.id, 3, SHA)).rejects.toBeInstanceOf(ReferenceCountError);
      await expect(repo.markReady(principal, randomUUID(), 3, SHA)).rejects.toBeInstanceOf(ReferenceCountError);
    });

    it('abandon turns only an upload in progress to PURGING', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const uploading = await repo.createUploading(principal);
      await repo.abandon(uploading.id);
      expect((await repo.find(uploading.id))?.status).toBe('PURGING');
      const ready = await seed.readyObject(principal);
      await repo.abandon(ready.id);
      expect(await repo.find(ready.id)).toMatchObject({ status: 'READY', refCount: 1 });
    });

    it('retain counts one more reference on a READY object of the principal, and refuses otherwise', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const ready = await seed.readyObject(principal);
      expect(await repo.retain(seed.principal(), ready.id)).toBe(false);
      expect(await repo.retain(principal, ready.id)).toBe(true);
      expect((await repo.find(ready.id))?.refCount).toBe(2);
      const uploading = await repo.createUploading(principal);
      expect(await repo.retain(principal, uploading.id)).toBe(false);
      expect(await repo.retain(principal, randomUUID())).toBe(false);
    });

    it('release drops one reference per listed id and returns those that reached zero, now PURGING', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const kept = await seed.readyObject(principal);
      const twice = await seed.readyObject(principal);
      await repo.retain(principal, kept.id);
      await repo.retain(principal, twice.id);
      expect(await repo.release([])).toEqual([]);
      expect(await repo.release([kept.id, twice.id, twice.id])).toEqual([twice.id]);
      expect(await repo.find(kept.id)).toMatchObject({ status: 'READY', refCount: 1 });
      expect(await repo.find(twice.id)).toMatchObject({ status: 'PURGING', refCount: 0 });
      expect(await repo.retain(principal, twice.id)).toBe(false);
    });

    it('release refuses more references than held, or an unknown object, and changes nothing', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const object = await seed.readyObject(principal);
      await expect(repo.release([object.id, object.id])).rejects.toBeInstanceOf(ReferenceCountError);
      await expect(repo.release([object.id, randomUUID()])).rejects.toBeInstanceOf(ReferenceCountError);
      expect(await repo.find(object.id)).toMatchObject({ status: 'READY', refCount: 1 });
    });

    it('finishPurge removes an unreferenced PURGING object, or keeps it PURGED while file rows point at it', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const ready = await seed.readyObject(principal);
      expect(await repo.finishPurge(ready.id)).toBe(false);
      await repo.release([ready.id]);
      expect(await repo.finishPurge(ready.id)).toBe(true);
      expect(await repo.find(ready.id)).toBeNull();
      expect(await repo.finishPurge(ready.id)).toBe(false);

      const pointed = await seed.file(principal);
      await repo.release([pointed.objectId]);
      expect(await repo.finishPurge(pointed.objectId)).toBe(true);
      expect(await repo.find(pointed.objectId)).toMatchObject({ status: 'PURGED', refCount: 0 });
      expect(await repo.finishPurge(pointed.objectId)).toBe(false);
    });
  });
}
