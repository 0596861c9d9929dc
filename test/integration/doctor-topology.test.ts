import { createServer, connect, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TopologyProbe } from '../../apps/storage/src/doctor/topology.probe';
import { TEST_BUCKET, TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { doctorConfigFor } from '../support/doctor';

// What the doctor reports of the setup it finds, against the real Postgres and Redis: a direct database, one
// through something in between (a TCP forwarder standing in for a pooler), one Redis, and one that does not answer.
// Sentinel and Cluster are reported by the tests that start them (test/e2e/redis-*.test.ts).
let forwarder: Server;
let forwardedUrl: string;

beforeAll(async () => {
  const target = new URL(TEST_DATABASE_URL);
  forwarder = createServer((client) => {
    const server = connect(Number(target.port || 5432), target.hostname);
    client.pipe(server).pipe(client);
    client.on('error', () => server.destroy());
    server.on('error', () => client.destroy());
  });
  await new Promise<void>((listening) => forwarder.listen(0, '127.0.0.1', listening));
  const url = new URL(TEST_DATABASE_URL);
  url.port = String((forwarder.address() as { port: number }).port);
  forwardedUrl = url.toString();
});

afterAll(() => new Promise((closed) => forwarder.close(closed)));

describe('the doctor reports the topology', () => {
  it('reports a direct Postgres and one Redis, with nothing to warn about', async () => {
    const report = await new TopologyProbe(
      doctorConfigFor(TEST_DATABASE_URL, TEST_BUCKET, { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: 'uhp' }),
    ).report();
    expect(report.postgres.throughPooler).toBe(false);
    expect(report.postgres.services.server).toMatch(/^PostgreSQL \d+/);
    expect(report.postgres.services.url).not.toContain('postgres@');
    expect(report.redis).toMatchObject({ mode: 'standalone', keyPrefix: 'uhp', replicas: 0 });
    expect(report.redis?.version).toMatch(/^\d+\.\d+/);
    expect(report.warnings).toEqual([]);
  });

  it('sees a URL that reaches Postgres through something else, and warns when no direct URL is set', async () => {
    const pooled = await new TopologyProbe(doctorConfigFor(forwardedUrl, TEST_BUCKET)).report();
    expect(pooled.postgres.throughPooler).toBe(true);
    expect(pooled.warnings.join('\n')).toMatch(/DATABASE_DIRECT_URL is unset/);
    expect(pooled.redis).toBeUndefined();

    const withDirect = await new TopologyProbe(
      doctorConfigFor(forwardedUrl, TEST_BUCKET, { DATABASE_DIRECT_URL: TEST_DATABASE_URL }),
    ).report();
    expect(withDirect.postgres.throughPooler).toBe(true);
    expect(withDirect.postgres.direct?.serverPort).toBe(withDirect.postgres.services.serverPort);
    expect(withDirect.warnings).toEqual([]);
  });

  it('reports a Redis that does not answer, without failing the check', async () => {
    const report = await new TopologyProbe(
      doctorConfigFor(TEST_DATABASE_URL, TEST_BUCKET, { REDIS_URL: 'redis://127.0.0.1:1' }),
    ).report();
    expect(report.redis?.error).toBeTruthy();
    expect(report.warnings.some((warning) => warning.startsWith('Redis:'))).toBe(true);
  });
});
