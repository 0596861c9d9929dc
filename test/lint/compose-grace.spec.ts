import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../libs/common/src/config/load-config';
import { gatewayConfigSchema } from '../../libs/common/src/config/config.schema';

const ROOT = join(__dirname, '../..');
/** What a service needs beyond its own grace to close its modules and exit before Docker's SIGKILL. */
const EXIT_MARGIN_SECONDS = 5;

interface ComposeService {
  stop_grace_period?: string;
  environment?: Record<string, string | number>;
}

/** `${VAR:-default}` as compose reads it with VAR unset. */
const withDefaults = (value: string) => value.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1');
const seconds = (duration: string) => {
  const match = /^(\d+)(s|m)$/.exec(duration);
  if (!match) throw new Error(`unexpected duration ${duration}`);
  return Number(match[1]) * (match[2] === 'm' ? 60 : 1);
};

describe('docker-compose.yml: stop_grace_period and SHUTDOWN_GRACE_MS agree', () => {
  const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, ComposeService>;
  };
  const defaultGraceMs = loadConfig(gatewayConfigSchema, {}).SHUTDOWN_GRACE_MS;
  const apps = Object.entries(compose.services).filter(([, service]) => service.stop_grace_period !== undefined);

  it('covers the gateway, storage and every worker', () => {
    const names = apps.map(([name]) => name);
    expect(names).toEqual(expect.arrayContaining(['gateway', 'storage']));
    expect(names.some((name) => name.startsWith('worker'))).toBe(true);
  });

  it("each service's grace period outlasts its drain, so requests and jobs in flight finish before SIGKILL", () => {
    for (const [name, service] of apps) {
      const configured = service.environment?.SHUTDOWN_GRACE_MS;
      const graceMs = configured === undefined ? defaultGraceMs : Number(withDefaults(String(configured)));
      expect(seconds(service.stop_grace_period!), name).toBeGreaterThanOrEqual(graceMs / 1000 + EXIT_MARGIN_SECONDS);
    }
  });
});
