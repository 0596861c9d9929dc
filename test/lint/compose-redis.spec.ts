import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { workerConfigSchema } from '@app/common';

/**
 * docker-compose.yml passes the Redis topology (Sentinel, Cluster) and DATABASE_DIRECT_URL through from the shell
 * or `.env` under their own names, and with none of them set it stays one Redis: every such variable empty, which
 * the services read as unset (load-config.ts). Read as compose interpolates, without a Docker engine.
 */
const ROOT = join(__dirname, '../..');
/** The variables of the Redis topologies, as the services' config schema names them. */
const TOPOLOGY = Object.keys(workerConfigSchema.shape).filter((variable) => /^REDIS_(SENTINEL|CLUSTER)/.test(variable));
/** What the compose file requires set (`${VAR:?…}`) for any service to start. */
const REQUIRED = {
  POSTGRES_PASSWORD: 'pw',
  STORAGE_TOKEN: 'token-0123456789abcdef0123456789abcdef',
  UHP_API_KEYS: 'dev=sk_0123456789',
  S3_ACCESS_KEY_ID: 'access',
  S3_SECRET_ACCESS_KEY: 'secret-0123456789',
};

type Environment = Record<string, string | number>;
const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, { environment?: Environment }>;
};

/** `${VAR}`, `${VAR:-default}` and `${VAR:?message}` as compose reads them, an empty VAR counting as unset. */
function interpolate(value: string, shell: Record<string, string>): string {
  return value.replace(/\$\{([A-Z_]+)(?::([-?])([^}]*))?\}/g, (_, name: string, operator?: string, rest?: string) => {
    const given = shell[name];
    if (given) return given;
    if (operator === '?') throw new Error(`${name}: ${rest}`);
    return operator === '-' ? (rest ?? '') : '';
  });
}
const environmentOf = (service: string, shell: Record<string, string>) =>
  Object.fromEntries(
    Object.entries(compose.services[service]!.environment ?? {}).map(([name, value]) => [
      name,
      interpolate(String(value), { ...REQUIRED, ...shell }),
    ]),
  );
const redisClients = Object.keys(compose.services).filter(
  (name) => compose.services[name]!.environment?.REDIS_URL !== undefined,
);

describe('docker-compose.yml: Redis topology and the direct database URL', () => {
  it('gives the gateway and every worker the topology variables, each from the shell variable of its name', () => {
    expect(redisClients).toEqual(
      expect.arrayContaining(['gateway', 'worker-preview', 'worker-archive', 'worker-purge']),
    );
    for (const service of redisClients)
      for (const name of TOPOLOGY) expect(compose.services[service]!.environment![name], service).toBe(`\${${name}:-}`);
  });

  it('with none of them set: one Redis, the compose service, and every topology variable empty (unset)', () => {
    for (const service of redisClients) {
      const env = environmentOf(service, {});
      expect(env.REDIS_URL, service).toBe('redis://redis:6379');
      for (const name of TOPOLOGY) expect(env[name], `${service} ${name}`).toBe('');
      expect(env.DATABASE_DIRECT_URL, service).toBe('');
    }
  });

  it('passes Sentinel settings through unchanged, and never the shell’s own REDIS_URL', () => {
    const shell = {
      REDIS_SENTINELS: 'sentinel-1:26379,sentinel-2:26379',
      REDIS_SENTINEL_MASTER: 'uhp',
      REDIS_SENTINEL_PASSWORD: 'sentinel-pw',
      REDIS_SENTINEL_TLS: 'true',
      REDIS_URL: 'redis://127.0.0.1:6379',
    };
    for (const service of redisClients) {
      const env = environmentOf(service, shell);
      expect(env, service).toMatchObject({ ...shell, REDIS_URL: 'redis://redis:6379' });
    }
    expect(environmentOf('gateway', { REDIS_CLUSTER_NODES: 'node-1:6379' }).REDIS_CLUSTER_NODES).toBe('node-1:6379');
  });

  it('gives every service that reaches Postgres DATABASE_DIRECT_URL from the shell, for the CLIs behind PgBouncer', () => {
    const direct = 'postgresql://uhp:pw@postgres:5432/uhp';
    for (const service of ['gateway', 'storage', 'migrate', 'worker-purge'])
      expect(environmentOf(service, { DATABASE_DIRECT_URL: direct }).DATABASE_DIRECT_URL, service).toBe(direct);
  });
});
