import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectKeys, running, scale, signal, sql, stackEnv, start, waitExit, type StackEnv } from './support/stack';

/**
 * The hooks the SIGTERM (graceful drain) tests build on, proven on the running stack; also the
 * containers' own part of a graceful stop: tini as PID 1 passes SIGTERM on, so the service stops by
 * itself well inside compose's stop_grace_period instead of being SIGKILLed at its end.
 */
let env: StackEnv;
beforeAll(async () => {
  env = await stackEnv();
});

describe('container harness', () => {
  it('SIGTERM to one service container: it stops by itself (not SIGKILL), and starts again healthy', async () => {
    for (const service of ['worker-purge', 'gateway'] as const) {
      const started = Date.now();
      await signal(service, 'TERM');
      const code = await waitExit(service, 1, 60);
      expect([0, 143], `${service} exit status`).toContain(code);
      expect(Date.now() - started).toBeLessThan(30_000);
      await start(service);
    }
    expect((await fetch(`${env.baseUrl}/readyz`)).status).toBe(200);
  });

  describe('a second worker', () => {
    afterAll(() => scale('worker-archive', 1));
    it('starts next to the first and becomes healthy', async () => {
      await scale('worker-archive', 2);
      expect(await running('worker-archive')).toBe(2);
    });
  });

  it('sees what an upload left in Postgres and S3, and that a delete leaves nothing', async () => {
    const form = new FormData();
    form.append('purpose', 'user_data');
    form.append('file', new Blob([`harness ${Date.now()}`]), 'harness.txt');
    const response = await fetch(`${env.baseUrl}/v1/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.keyA}` },
      body: form,
    });
    expect(response.status).toBe(200);
    const file = (await response.json()) as { id: string };
    const rows = await sql(
      `SELECT o.storage_key, o.status FROM files f JOIN stored_objects o ON o.id = f.object_id WHERE f.id = '${file.id}'`,
    );
    expect(rows).toHaveLength(1);
    const [key] = rows[0]!;
    expect(await objectKeys()).toContain(key);

    expect(
      (
        await fetch(`${env.baseUrl}/v1/files/${file.id}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${env.keyA}` },
        })
      ).status,
    ).toBe(200);
    const deadline = Date.now() + 30_000;
    while ((await objectKeys()).includes(key!) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500));
    expect(await objectKeys()).not.toContain(key);
  });
});
