import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newId } from '@app/contracts';
import type { NewResponse, ResponseRepository, SessionRepository } from '@app/db';
import { eachSubject, type SubjectFactory } from './subject';

const OUTPUT = { message_id: 'msg_1', text: 'done', citations: [] };

/** What ResponsesService and the agent runner rely on from ResponseRepository; `sessions` deletes their session. */
export function responseRepositoryContract(
  subject: SubjectFactory<{ responses: ResponseRepository; sessions: SessionRepository }>,
) {
  describe('ResponseRepository contract', () => {
    const current = eachSubject(subject);

    async function newResponse(principalId: string, extra: Partial<NewResponse> = {}) {
      const { repo, seed } = current();
      const at = await seed.session(principalId);
      return repo.responses.create(principalId, {
        id: newId('response'),
        ...at,
        agent: 'report',
        inputFileIds: [newId('file')],
        metadata: { ticket: '7' },
        taskTokenHash: randomUUID(),
        deadlineAt: new Date(Date.now() + 60_000),
        createdAt: new Date(Date.UTC(2026, 2, 4, 5, 6, 7, 8)),
        ...extra,
      });
    }

    it('create returns it in progress; only its principal finds it', async () => {
      const { repo, seed } = current();
      const [alice, bob] = [seed.principal(), seed.principal()];
      const row = await newResponse(alice);
      expect(row).toMatchObject({
        agent: 'report',
        status: 'in_progress',
        metadata: { ticket: '7' },
        output: null,
        error: null,
        completedAt: null,
        createdAt: new Date(Date.UTC(2026, 2, 4, 5, 6, 7, 8)),
      });
      expect(row.inputFileIds).toHaveLength(1);
      expect(row).not.toHaveProperty('taskTokenHash');
      expect(await repo.responses.findForOwner(alice, row.id)).toEqual(row);
      expect(await repo.responses.findForOwner(bob, row.id)).toBeNull();
      expect(await repo.responses.finish(bob, row.id, { status: 'completed', output: OUTPUT })).toBeNull();
      expect((await repo.responses.findForOwner(alice, row.id))?.status).toBe('in_progress');
    });

    it('finish ends a response in progress once, with its output or error', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const completed = await newResponse(principal);
      const done = await repo.responses.finish(principal, completed.id, { status: 'completed', output: OUTPUT });
      expect(done).toMatchObject({ id: completed.id, status: 'completed', output: OUTPUT, error: null });
      expect(done?.completedAt).toBeInstanceOf(Date);
      const error = { code: 'agent_failed', message: 'no' };
      expect(await repo.responses.finish(principal, completed.id, { status: 'failed', error })).toBeNull();
      expect(await repo.responses.findForOwner(principal, completed.id)).toEqual(done);

      const failed = await newResponse(principal);
      const ended = await repo.responses.finish(principal, failed.id, { status: 'failed', error });
      expect(ended).toMatchObject({ status: 'failed', error, output: null });
    });

    it('a response of a deleted session is out of reach', async () => {
      const { repo, seed } = current();
      const principal = seed.principal();
      const row = await newResponse(principal);
      await repo.sessions.markDeleted(principal, row.sessionId);
      expect(await repo.responses.findForOwner(principal, row.id)).toBeNull();
      expect(await repo.responses.finish(principal, row.id, { status: 'completed', output: OUTPUT })).toBeNull();
    });
  });
}
