import { describe, expect, it } from 'vitest';
import { gatewayConfigSchema, storageConfigSchema } from './config.schema';
import { ConfigError, loadConfig } from './load-config';

describe('loadConfig', () => {
  it('applies the embedded defaults', () => {
    const config = loadConfig(gatewayConfigSchema, {});
    expect(config.PORT).toBe(8080);
    expect(config.UHP_MAX_FILE_BYTES).toBe(5 * 1024 ** 3);
    expect(config.UHP_MAX_INLINE_FILE_BYTES).toBe(20 * 1024 ** 2);
    expect(config.PREVIEW_ENABLED).toBe(true);
  });

  it('lists every bad variable at once and hides secrets', () => {
    let caught: unknown;
    try {
      loadConfig(storageConfigSchema, {
        STORAGE_PORT: 'eighty',
        S3_ENDPOINT: 'not a url',
        S3_PART_SIZE_BYTES: '12',
        STORAGE_TOKEN: ' ',
      });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const problems = (caught as ConfigError).problems.join('\n');
    expect(problems).toMatch(/STORAGE_PORT/);
    expect(problems).toMatch(/S3_ENDPOINT/);
    expect(problems).toMatch(/S3_PART_SIZE_BYTES/);
    expect((caught as ConfigError).problems).toHaveLength(3);
  });

  it('treats empty variables as unset', () => {
    expect(loadConfig(gatewayConfigSchema, { PORT: '' }).PORT).toBe(8080);
  });

  it('parses booleans', () => {
    expect(loadConfig(gatewayConfigSchema, { PREVIEW_ENABLED: 'false' }).PREVIEW_ENABLED).toBe(false);
    expect(() => loadConfig(gatewayConfigSchema, { PREVIEW_ENABLED: 'maybe' })).toThrow(/PREVIEW_ENABLED/);
  });
});
