import { describe, expect, it } from 'vitest';
import { gatewayConfigSchema, workerConfigSchema } from '../config/config.schema';
import { loadConfig } from '../config/load-config';
import { createLogger } from '../logging/logger';
import { storageClientOf } from './object-store.module';

describe('storageClientOf: where a service reads object bytes from', () => {
  const logger = createLogger('test', 'silent');
  const readsDirectly = (config: Parameters<typeof storageClientOf>[0]) => {
    const client = storageClientOf(config, logger);
    client.close();
    return client.readsDirectly;
  };

  it('the gateway reads straight from S3 unless told to relay through the storage service', () => {
    expect(readsDirectly(loadConfig(gatewayConfigSchema, {}))).toBe(true);
    expect(readsDirectly(loadConfig(gatewayConfigSchema, { STORAGE_DIRECT_READS: 'false' }))).toBe(false);
  });

  it('the worker relays through the storage service unless its pool may reach S3 and says so', () => {
    expect(readsDirectly(loadConfig(workerConfigSchema, {}))).toBe(false);
    expect(readsDirectly(loadConfig(workerConfigSchema, { STORAGE_DIRECT_READS: 'true' }))).toBe(true);
  });
});
