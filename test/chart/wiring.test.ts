import { PATH_METADATA } from '@nestjs/common/constants';
import { QueueKeys } from 'bullmq';
import { beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  DEV_STORAGE_TOKEN,
  gatewayConfigSchema,
  HealthModule,
  loadConfig,
  READINESS_CHECKS,
  storageConfigSchema,
  workerConfigSchema,
} from '@app/common';
import { QUEUE_NAMES } from '@app/contracts';
import { byKind, CI_VALUES, render, renderFailure, type K8sObject } from './support/helm';
import { deployments, plainValue, resolveEnv, serviceOf, workloads, type Workload } from './support/workloads';

/**
 * The chart's wiring against the code: the variables it sets are the config schema's, the ones a
 * deployment cannot leave at their laptop defaults are set, the services would boot with what it gives
 * them, probes and ports are the ones the services serve, and each pool's scaler watches BullMQ's keys.
 */
const SCHEMAS = { gateway: gatewayConfigSchema, storage: storageConfigSchema, worker: workerConfigSchema };
type Service = keyof typeof SCHEMAS;
const PORT_VARIABLE: Record<Service, string> = { gateway: 'PORT', storage: 'STORAGE_PORT', worker: 'WORKER_PORT' };

const keysOf = (schema: z.ZodObject) => Object.keys(schema.shape);

/**
 * What a Deployment must set: every variable whose default only makes sense on a laptop (a loopback
 * address, the development token), plus the gateway's public URL (its fallback is loopback too).
 */
function mustSet(service: Service): string[] {
  const defaults = loadConfig(SCHEMAS[service], {}) as Record<string, unknown>;
  const laptopOnly = Object.entries(defaults)
    .filter(([, value]) => typeof value === 'string' && (value.includes('127.0.0.1') || value === DEV_STORAGE_TOKEN))
    .map(([name]) => name)
    // The storage schema shares the storage-client block for its token; storage never calls itself.
    .filter((name) => !(service === 'storage' && name === 'STORAGE_URL'));
  return service === 'gateway' ? [...laptopOnly, 'UHP_PUBLIC_BASE_URL'] : laptopOnly;
}

/** Placeholder values for the Secret's keys, shaped as the schema wants them. */
const SECRET_PLACEHOLDERS: Record<string, string> = {
  DATABASE_URL: 'postgresql://uhp:secret@postgres.example.internal:5432/uhp',
  STORAGE_TOKEN: 'a-long-random-storage-token-0123456789',
  UHP_API_KEYS: 'alice=sk_0123456789abcdef',
  REDIS_PASSWORD: 'secret',
  S3_ACCESS_KEY_ID: 'access',
  S3_SECRET_ACCESS_KEY: 'secret-0123456789',
  AGENT_HTTP_TOKEN: 'token',
};

const rendered: Record<string, K8sObject[]> = {};
beforeAll(async () => {
  for (const values of CI_VALUES) rendered[values] = await render({ values });
});

describe.each(CI_VALUES)('ci/%s-values.yaml', (values) => {
  const objects = () => rendered[values]!;

  it('sets only variables the config schema knows, and every one a deployment must', () => {
    for (const workload of workloads(objects())) {
      const service = serviceOf(workload);
      const env = resolveEnv(workload.spec.template.spec.containers[0]!, objects());
      const names = Object.keys(env);
      if (service === 'migrate') {
        // The migration runner reads DATABASE_URL alone (libs/db/src/migrate/main.ts).
        expect(names).toEqual(['DATABASE_URL']);
        continue;
      }
      const known = keysOf(SCHEMAS[service]);
      expect(
        names.filter((name) => !known.includes(name)),
        `${workload.metadata.name}: unknown variables`,
      ).toEqual([]);
      expect(
        mustSet(service).filter((name) => !names.includes(name)),
        `${workload.metadata.name}: unset`,
      ).toEqual([]);
      expect(plainValue(env, 'HOST'), `${workload.metadata.name} listens on every interface of the pod`).toBe(
        '0.0.0.0',
      );
    }
  });

  it('gives every service a configuration it boots with (the schema accepts it, secrets as placeholders)', () => {
    for (const deployment of deployments(objects())) {
      const service = serviceOf(deployment) as Service;
      const env = resolveEnv(deployment.spec.template.spec.containers[0]!, objects());
      const plain = Object.fromEntries(
        Object.entries(env).map(([name, entry]) => [name, 'value' in entry ? entry.value : SECRET_PLACEHOLDERS[name]]),
      );
      expect(() => loadConfig(SCHEMAS[service], plain), deployment.metadata.name).not.toThrow();
      // Production: the services themselves refuse what only suits a laptop (config.schema.ts).
      expect(loadConfig(SCHEMAS[service], plain).UHP_ENV, deployment.metadata.name).toBe('production');
      if (service === 'gateway') {
        const config = loadConfig(gatewayConfigSchema, plain);
        expect(config.UHP_API_METRICS).toBe(false);
        expect(config.STORAGE_DIRECT_READS).toBe(true);
      }
    }
  });

  it('relays reads through the storage service when gateway.directReads is off (a gateway with no route to S3)', async () => {
    const relaying = await render({ values, overrides: { gateway: { directReads: false } } });
    const gateway = deployments(relaying).find((deployment) => serviceOf(deployment) === 'gateway')!;
    const env = resolveEnv(gateway.spec.template.spec.containers[0]!, relaying);
    expect(plainValue(env, 'STORAGE_DIRECT_READS')).toBe('false');
    expect(loadConfig(gatewayConfigSchema, { STORAGE_DIRECT_READS: 'false' }).STORAGE_DIRECT_READS).toBe(false);
  });

  it('points probes at paths the services serve, on the ports they listen on', () => {
    const served = servedHealthPaths();
    for (const deployment of deployments(objects())) {
      const service = serviceOf(deployment) as Service;
      const [container] = deployment.spec.template.spec.containers;
      const env = resolveEnv(container!, objects());
      const port = (name: string) => container!.ports!.find((p) => p.name === name)!.containerPort;
      expect(String(port('http')), deployment.metadata.name).toBe(plainValue(env, PORT_VARIABLE[service]));
      expect(String(port('metrics')), deployment.metadata.name).toBe(plainValue(env, 'METRICS_PORT'));
      for (const probe of [container!.startupProbe, container!.livenessProbe, container!.readinessProbe])
        expect(served, deployment.metadata.name).toContain(probe!.httpGet!.path);
    }
  });

  it('has each ScaledObject watch exactly the Redis keys BullMQ keeps its pool’s waiting and active jobs in', () => {
    for (const scaled of byKind(objects(), 'ScaledObject') as ScaledObject[]) {
      const target = deployments(objects()).find((d) => d.metadata.name === scaled.spec.scaleTargetRef.name);
      expect(target, scaled.metadata.name).toBeDefined();
      const env = resolveEnv(target!.spec.template.spec.containers[0]!, objects());
      const queues = plainValue(env, 'WORKER_QUEUES')!.split(',');
      const prefix = plainValue(env, 'REDIS_KEY_PREFIX')!;
      const redisUrl = new URL(plainValue(env, 'REDIS_URL')!);
      const expected = queues.flatMap((queue) => {
        const keys = new QueueKeys(prefix).getKeys(queue);
        return [keys.wait, keys.prioritized, keys.active];
      });
      expect(scaled.spec.triggers.map((trigger) => trigger.metadata.listName).sort()).toEqual(expected.sort());
      for (const trigger of scaled.spec.triggers) {
        expect(trigger.type).toBe('redis');
        expect(trigger.metadata.address).toBe(`${redisUrl.hostname}:${redisUrl.port || 6379}`);
        expect(trigger.metadata.databaseIndex).toBe(redisUrl.pathname.slice(1) || '0');
        expect(trigger.metadata.enableTLS).toBe(String(redisUrl.protocol === 'rediss:'));
      }
      // The scaled quantity is the sum of all of them.
      const terms = scaled.spec.advanced.scalingModifiers.formula.split('+').map((term) => term.trim());
      expect(terms.sort()).toEqual(scaled.spec.triggers.map((trigger) => trigger.name).sort());
      // With a Redis password, KEDA reads it from the workers' own Secret key.
      if (env.REDIS_PASSWORD && 'secret' in env.REDIS_PASSWORD) {
        const auth = byKind(objects(), 'TriggerAuthentication').find(
          (a) => a.metadata.name === scaled.spec.triggers[0]!.authenticationRef?.name,
        ) as
          | (K8sObject & { spec: { secretTargetRef: Array<{ parameter: string; name: string; key: string }> } })
          | undefined;
        expect(auth?.spec.secretTargetRef).toEqual([
          { parameter: 'password', name: env.REDIS_PASSWORD.secret, key: env.REDIS_PASSWORD.key },
        ]);
      }
    }
  });

  it('has every queue consumed by some pool, and previews consistent between gateway and pools', () => {
    const pools = deployments(objects()).filter((d) => serviceOf(d) === 'worker');
    const consumed = pools.flatMap((pool) =>
      plainValue(resolveEnv(pool.spec.template.spec.containers[0]!, objects()), 'WORKER_QUEUES')!.split(','),
    );
    const gateway = deployments(objects()).find((d) => serviceOf(d) === 'gateway')!;
    const previews = plainValue(resolveEnv(gateway.spec.template.spec.containers[0]!, objects()), 'PREVIEW_ENABLED');
    const needed = QUEUE_NAMES.filter((queue) => previews === 'true' || queue !== 'preview');
    expect([...new Set(consumed)].sort()).toEqual([...needed].sort());
  });
});

interface ScaledObject extends K8sObject {
  spec: {
    scaleTargetRef: { name: string };
    advanced: { scalingModifiers: { formula: string; target: string } };
    triggers: Array<{
      type: string;
      name: string;
      metadata: Record<string, string>;
      authenticationRef?: { name: string };
    }>;
  };
}

/** The paths the health controller every service mounts answers (read from its route metadata). */
function servedHealthPaths(): string[] {
  const module = HealthModule.forRoot({ provide: READINESS_CHECKS, useValue: [] });
  return (module.controllers ?? []).flatMap((controller) => {
    const base = String(Reflect.getMetadata(PATH_METADATA, controller) ?? '/').replace(/^\/?/, '/');
    return Object.getOwnPropertyNames(controller.prototype)
      .map((method) => Reflect.getMetadata(PATH_METADATA, controller.prototype[method] as object) as string | undefined)
      .filter((path): path is string => typeof path === 'string')
      .map((path) => `${base === '/' ? '' : base}/${path.replace(/^\//, '')}`);
  });
}

export type { Workload };

describe('gateway.corsOrigins', () => {
  const corsOf = async (overrides?: Record<string, unknown>) => {
    const objects = await render({ values: 'minimal', overrides });
    const gateway = deployments(objects).find((deployment) => serviceOf(deployment) === 'gateway')!;
    const value = plainValue(resolveEnv(gateway.spec.template.spec.containers[0]!, objects), 'UHP_CORS_ORIGINS');
    return { value, parsed: loadConfig(gatewayConfigSchema, { UHP_CORS_ORIGINS: value }).UHP_CORS_ORIGINS };
  };

  it('lets any page in by default, or the origins listed (a list or a comma-separated string)', async () => {
    expect(await corsOf()).toEqual({ value: '*', parsed: '*' });
    const origins = ['https://app.example.com', 'http://127.0.0.1:3000'];
    expect(await corsOf({ gateway: { corsOrigins: origins } })).toEqual({ value: origins.join(','), parsed: origins });
    expect((await corsOf({ gateway: { corsOrigins: origins.join(', ') } })).parsed).toEqual(origins);
  });

  it('refuses at render what no browser sends as its Origin', async () => {
    for (const corsOrigins of ['app.example.com', 'https://app.example.com/', ['https://App.example.com'], []])
      expect(await renderFailure({ values: 'minimal', overrides: { gateway: { corsOrigins } } })).toMatch(
        /corsOrigins/,
      );
  });
});
