import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { Manifest } from '@app/contracts';
import type { ArchiveRepository, SessionRepository } from '@app/db';
import { eachSubject, SHA, type SubjectFactory } from './subject';

const manifest = (): Manifest => ({ hash: randomBytes(32).toString('hex'), filesTotal: 2, bytesTotal: 10n });
const DONE = { filesDone: 2, bytesDone: 10 };

/** What ArchivesService and the archive worker rely on from ArchiveRepository; `sessions` deletes their session. */
export function archiveRepositoryContract(
  subject: SubjectFactory<{ archives: ArchiveRepository; sessions: SessionRepository }>,
) {
  describe('ArchiveRepository contract', () => {
    const current = eachSubject(subject);

    it('requestBuild makes one pending row per session and manifest, for a live session of the principal', async () => {
      const { repo, seed } = current();
      const [alice, bob] = [seed.principal(), seed.principal()];
      const { sessionId } = await seed.session(alice);
      const wanted = manifest();
      expect(await repo.archives.requestBuild(bob, sessionId, wanted)).toBeNull();
      const row = await repo.archives.requestBuild(alice, sessionId, wanted);
      expect(row).toMatchObject({
        sessionId,
        manifestHash: wanted.hash,
        status: 'pending',
        filesTotal: 2,
        bytesTotal: 10n,
        filesDone: 0,
        bytesDone: 0n,
        error: null,
        object: null,
      });
      expect(row?.createdAt).toBeInstanceOf(Date);
      expect(await repo.archives.requestBuild(alice, sessionId, wanted)).toEqual(row);
      expect(await repo.archives.findForManifest(alice, sessionId, wanted.hash)).toEqual(row);
      expect(await repo.archives.findForManifest(bob, sessionId, wanted.hash)).toBeNull();
      expect(await repo.archives.findForBuild(row!.id)).toEqual({
        id: row!.id,
        principalId: alice,
        sessionId,
        manifestHash: wanted.hash,
        status: 'pending',
        filesTotal: 2,
        bytesTotal: 10n,
        sessionLive: true,
      });
      expect(await repo.archives.findForBuild(randomUUID())).toBeNull();

      await repo.sessions.markDeleted(alice, sessionId);
      expect(await repo.archives.findForManifest(alice, sessionId, wanted.hash)).toBeNull();
      expect(await repo.archives.requestBuild(alice, sessionId, manifest())).toBeNull();
      expect((await repo.archives.findForBuild(row!.id))?.sessionLive).toBe(false);
    });

    it('claim, progress, fail and request again: a failed build is pending again, its error kept short', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const { sessionId } = await seed.session(principal);
      const wanted = manifest();
      const row = (await repo.archives.requestBuild(principal, sessionId, wanted))!;
      expect(await repo.archives.reportProgress(principal, row.id, 1, 5)).toBe(false);
      expect(await repo.archives.claimForBuild(seed.principal(), row.id)).toBe(false);
      expect(await repo.archives.claimForBuild(principal, row.id)).toBe(true);
      expect(await repo.archives.reportProgress(seed.principal(), row.id, 1, 5)).toBe(false);
      expect(await repo.archives.reportProgress(principal, row.id, 1, 5)).toBe(true);
      expect(await repo.archives.findForManifest(principal, sessionId, wanted.hash)).toMatchObject({
        status: 'building',
        filesDone: 1,
        bytesDone: 5n,
      });
      await repo.archives.markFailed(seed.principal(), row.id, 'not yours');
      await repo.archives.markFailed(principal, row.id, 'e'.repeat(1500));
      const failed = await repo.archives.findForManifest(principal, sessionId, wanted.hash);
      expect(failed).toMatchObject({ status: 'failed', error: 'e'.repeat(1000) });
      expect(await repo.archives.reportProgress(principal, row.id, 2, 10)).toBe(false);

      const again = await repo.archives.requestBuild(principal, sessionId, wanted);
      expect(again).toMatchObject({ id: row.id, status: 'pending', error: null, filesDone: 0, bytesDone: 0n });
      await repo.archives.markFailed(principal, row.id, 'twice');
      expect(await repo.archives.claimForBuild(principal, row.id)).toBe(true);
      expect(await repo.archives.findForManifest(principal, sessionId, wanted.hash)).toMatchObject({
        status: 'building',
        error: null,
        filesDone: 0,
      });
    });

    it('countBuilding counts pending and building rows of live sessions of the principal', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const live = await seed.session(principal);
      const doomed = await seed.session(principal);
      const pending = (await repo.archives.requestBuild(principal, live.sessionId, manifest()))!;
      const building = (await repo.archives.requestBuild(principal, live.sessionId, manifest()))!;
      const failed = (await repo.archives.requestBuild(principal, live.sessionId, manifest()))!;
      await repo.archives.requestBuild(principal, doomed.sessionId, manifest());
      await repo.archives.claimForBuild(principal, building.id);
      await repo.archives.markFailed(principal, failed.id, 'no');
      expect(await repo.archives.countBuilding(principal)).toBe(3);
      await repo.sessions.markDeleted(principal, doomed.sessionId);
      expect(await repo.archives.countBuilding(principal)).toBe(2);
      expect(await repo.archives.countBuilding(seed.principal())).toBe(0);
      expect(pending.status).toBe('pending');
    });

    it('completeBuild turns a building row ready and supersedes the older archives of the session', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const { sessionId } = await seed.session(principal);
      const oldZip = await seed.readyObject(principal);
      const zip = await seed.readyObject(principal);
      const old = (await repo.archives.requestBuild(principal, sessionId, manifest()))!;
      await repo.archives.claimForBuild(principal, old.id);
      expect(await repo.archives.completeBuild(principal, old.id, oldZip.id, DONE)).toEqual({
        outcome: 'ready',
        released: [],
      });
      await sleep(5);
      const wanted = manifest();
      const mine = (await repo.archives.requestBuild(principal, sessionId, wanted))!;
      await sleep(5);
      const newer = manifest();
      await repo.archives.requestBuild(principal, sessionId, newer);

      expect(await repo.archives.completeBuild(principal, mine.id, zip.id, DONE)).toEqual({
        outcome: 'superseded',
        released: [],
      });
      await repo.archives.claimForBuild(principal, mine.id);
      expect(await repo.archives.completeBuild(seed.principal(), mine.id, zip.id, DONE)).toMatchObject({
        outcome: 'superseded',
      });
      expect(await repo.archives.completeBuild(principal, mine.id, zip.id, DONE)).toEqual({
        outcome: 'ready',
        released: [oldZip.id],
      });
      expect(await repo.archives.findForBuild(old.id)).toBeNull();
      expect((await repo.archives.findForManifest(principal, sessionId, newer.hash))?.status).toBe('pending');
      expect(await repo.archives.findForManifest(principal, sessionId, wanted.hash)).toMatchObject({
        status: 'ready',
        filesDone: 2,
        bytesDone: 10n,
        object: { storageKey: zip.storageKey, bytes: 3n, sha256: SHA },
      });
      expect(await repo.archives.claimForBuild(principal, mine.id)).toBe(false);
      await repo.archives.markFailed(principal, mine.id, 'late');
      expect((await repo.archives.requestBuild(principal, sessionId, wanted))?.status).toBe('ready');
    });

    it('dropLost takes a ready row once; removeUnbuilt only a row without its ZIP', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const { sessionId } = await seed.session(principal);
      const zip = await seed.readyObject(principal);
      const built = manifest();
      const row = (await repo.archives.requestBuild(principal, sessionId, built))!;
      expect(await repo.archives.dropLost(principal, row.id)).toEqual([]);
      await repo.archives.claimForBuild(principal, row.id);
      await repo.archives.completeBuild(principal, row.id, zip.id, DONE);
      await repo.archives.removeUnbuilt(principal, row.id);
      expect(await repo.archives.findForBuild(row.id)).not.toBeNull();
      expect(await repo.archives.dropLost(seed.principal(), row.id)).toEqual([]);
      expect(await repo.archives.dropLost(principal, row.id)).toEqual([zip.id]);
      expect(await repo.archives.dropLost(principal, row.id)).toEqual([]);

      const unbuilt = (await repo.archives.requestBuild(principal, sessionId, manifest()))!;
      await repo.archives.removeUnbuilt(seed.principal(), unbuilt.id);
      expect(await repo.archives.findForBuild(unbuilt.id)).not.toBeNull();
      await repo.archives.removeUnbuilt(principal, unbuilt.id);
      expect(await repo.archives.findForBuild(unbuilt.id)).toBeNull();
    });

    it('deleteForSession removes every archive of the session of the principal and returns their ZIPs', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const { sessionId } = await seed.session(principal);
      const other = await seed.session(principal);
      const zip = await seed.readyObject(principal);
      const ready = (await repo.archives.requestBuild(principal, sessionId, manifest()))!;
      await repo.archives.claimForBuild(principal, ready.id);
      await repo.archives.completeBuild(principal, ready.id, zip.id, DONE);
      await sleep(5);
      const pending = (await repo.archives.requestBuild(principal, sessionId, manifest()))!;
      const kept = (await repo.archives.requestBuild(principal, other.sessionId, manifest()))!;
      expect(await repo.archives.deleteForSession(seed.principal(), sessionId)).toEqual([]);
      expect(await repo.archives.deleteForSession(principal, sessionId)).toEqual([zip.id]);
      expect(await repo.archives.findForBuild(ready.id)).toBeNull();
      expect(await repo.archives.findForBuild(pending.id)).toBeNull();
      expect(await repo.archives.findForBuild(kept.id)).not.toBeNull();
      expect(await repo.archives.deleteForSession(principal, sessionId)).toEqual([]);
    });
  });
}
