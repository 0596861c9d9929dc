import { describe, expect, it } from 'vitest';
import {
  fileLimitsOf,
  gatewayConfigSchema,
  staticS3CredentialsOf,
  storageConfigSchema,
  workerConfigSchema,
} from './config.schema';
import { ConfigError, loadConfig } from './load-config';

describe('loadConfig', () => {
  it('applies the embedded defaults', () => {
    const config = loadConfig(gatewayConfigSchema, {});
    expect(config.PORT).toBe(8080);
    expect(config.UHP_MAX_FILE_BYTES).toBe(64 * 1024 ** 3);
    expect(config.UHP_MAX_SINGLE_REQUEST_FILE_BYTES).toBe(5 * 1024 ** 3);
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

  it('fixes V8 heap growth at 100 % in every service; 0 leaves V8 its own heuristic', () => {
    for (const schema of [gatewayConfigSchema, storageConfigSchema, workerConfigSchema])
      expect(loadConfig(schema, {}).UHP_HEAP_GROWING_PERCENT).toBe(100);
    expect(loadConfig(gatewayConfigSchema, { UHP_HEAP_GROWING_PERCENT: '0' }).UHP_HEAP_GROWING_PERCENT).toBe(0);
    expect(() => loadConfig(storageConfigSchema, { UHP_HEAP_GROWING_PERCENT: '-5' })).toThrow(
      /UHP_HEAP_GROWING_PERCENT/,
    );
  });

  it('parses booleans', () => {
    expect(loadConfig(gatewayConfigSchema, { PREVIEW_ENABLED: 'false' }).PREVIEW_ENABLED).toBe(false);
    expect(() => loadConfig(gatewayConfigSchema, { PREVIEW_ENABLED: 'maybe' })).toThrow(/PREVIEW_ENABLED/);
  });
});

describe('S3 credentials', () => {
  it('are optional: with neither key the AWS SDK default chain is used (IRSA, EKS Pod Identity)', () => {
    const config = loadConfig(storageConfigSchema, {});
    expect(config.S3_ACCESS_KEY_ID).toBeUndefined();
    expect(config.S3_SECRET_ACCESS_KEY).toBeUndefined();
    expect(staticS3CredentialsOf(config)).toBeUndefined();
  });

  it('are used as given when both keys are set', () => {
    const config = loadConfig(storageConfigSchema, { S3_ACCESS_KEY_ID: 'ak', S3_SECRET_ACCESS_KEY: 'sk-0123456789' });
    expect(staticS3CredentialsOf(config)).toEqual({ accessKeyId: 'ak', secretAccessKey: 'sk-0123456789' });
  });

  it('refuse one key without the other, naming the missing one and hiding the given one', () => {
    expect(() => loadConfig(storageConfigSchema, { S3_ACCESS_KEY_ID: 'ak' })).toThrow(
      /S3_SECRET_ACCESS_KEY: set both S3 keys, or neither/,
    );
    let caught: unknown;
    try {
      loadConfig(storageConfigSchema, { S3_SECRET_ACCESS_KEY: 'sk-0123456789' });
    } catch (error) {
      caught = error;
    }
    expect((caught as ConfigError).problems).toEqual([
      'S3_ACCESS_KEY_ID: set both S3 keys, or neither (then the AWS SDK default credential chain is used) (unset)',
    ]);
  });
});

describe('REDIS_PASSWORD', () => {
  it('is optional and kept apart from REDIS_URL', () => {
    expect(loadConfig(workerConfigSchema, {}).REDIS_PASSWORD).toBeUndefined();
    const config = loadConfig(gatewayConfigSchema, { REDIS_URL: 'redis://redis:6379/2', REDIS_PASSWORD: 'pw' });
    expect(config.REDIS_URL).toBe('redis://redis:6379/2');
    expect(config.REDIS_PASSWORD).toBe('pw');
  });
});

describe('file limits', () => {
  const MiB = 1024 ** 2;
  const GiB = 1024 ** 3;

  it('by default: any file up to 64 GiB, 5 GiB in one request, 20 MiB inline', () => {
    expect(fileLimitsOf(loadConfig(gatewayConfigSchema, {}))).toEqual({
      maxFileBytes: 64 * GiB,
      maxSingleRequestFileBytes: 5 * GiB,
      maxInlineFileBytes: 20 * MiB,
    });
    expect(loadConfig(storageConfigSchema, {}).UHP_MAX_FILE_BYTES).toBe(64 * GiB);
  });

  it('UHP_MAX_FILE_BYTES below the single-request and inline limits caps those too', () => {
    const config = loadConfig(gatewayConfigSchema, {
      UHP_MAX_FILE_BYTES: String(6 * MiB),
      UHP_MAX_INLINE_FILE_BYTES: String(8 * MiB),
    });
    expect(fileLimitsOf(config)).toEqual({
      maxFileBytes: 6 * MiB,
      maxSingleRequestFileBytes: 6 * MiB,
      maxInlineFileBytes: 6 * MiB,
    });
  });

  it('smaller single-request and inline limits hold beside it', () => {
    const config = loadConfig(gatewayConfigSchema, {
      UHP_MAX_FILE_BYTES: String(6 * MiB),
      UHP_MAX_SINGLE_REQUEST_FILE_BYTES: String(MiB),
      UHP_MAX_INLINE_FILE_BYTES: String(2 * MiB),
    });
    expect(fileLimitsOf(config)).toEqual({
      maxFileBytes: 6 * MiB,
      maxSingleRequestFileBytes: MiB,
      maxInlineFileBytes: 2 * MiB,
    });
  });

  it('UHP_MAX_FILE_BYTES stops at S3’s largest object, 5 TiB', () => {
    const fiveTiB = 5 * 1024 * GiB;
    for (const schema of [gatewayConfigSchema, storageConfigSchema]) {
      expect(loadConfig(schema, { UHP_MAX_FILE_BYTES: String(fiveTiB) }).UHP_MAX_FILE_BYTES).toBe(fiveTiB);
      expect(() => loadConfig(schema, { UHP_MAX_FILE_BYTES: String(fiveTiB + 1) })).toThrow(/UHP_MAX_FILE_BYTES/);
    }
  });

  it('refuses to start with the removed UHP_MAX_UPLOAD_BYTES, pointing at UHP_MAX_FILE_BYTES, beside other problems', () => {
    for (const schema of [gatewayConfigSchema, storageConfigSchema]) {
      let caught: unknown;
      try {
        loadConfig(schema, { UHP_MAX_UPLOAD_BYTES: '68719476736', LOG_LEVEL: 'loud' });
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(ConfigError);
      const problems = (caught as ConfigError).problems;
      expect(problems).toHaveLength(2);
      expect(problems).toContain(
        'UHP_MAX_UPLOAD_BYTES: was removed: UHP_MAX_FILE_BYTES now caps every file, resumable uploads ' +
          '(/v1/uploads, /v1/tus) too; set that instead ("68719476736")',
      );
    }
    // Empty counts as unset, as for every variable.
    expect(() => loadConfig(gatewayConfigSchema, { UHP_MAX_UPLOAD_BYTES: '' })).not.toThrow();
    expect('UHP_MAX_UPLOAD_BYTES' in loadConfig(gatewayConfigSchema, {})).toBe(false);
  });
});

describe('UHP_CORS_ORIGINS', () => {
  const origins = (value?: string) =>
    loadConfig(gatewayConfigSchema, value === undefined ? {} : { UHP_CORS_ORIGINS: value }).UHP_CORS_ORIGINS;

  it('is * by default: any page may call the API with a key it holds', () => {
    expect(origins()).toBe('*');
    expect(origins(' * ')).toBe('*');
  });

  it('takes a comma-separated list of exact origins, spaces and repeats aside', () => {
    expect(origins('https://app.example.com, http://127.0.0.1:3000,https://app.example.com')).toEqual([
      'https://app.example.com',
      'http://127.0.0.1:3000',
    ]);
  });

  it('refuses at start anything a browser would never send as its Origin, naming each', () => {
    for (const junk of [
      'app.example.com',
      'https://app.example.com/',
      'https://app.example.com/path',
      'https://App.Example.com',
      'https://app.example.com:443',
      'https://user@app.example.com',
      'ftp://app.example.com',
      '*.example.com',
    ]) {
      expect(() => origins(`https://ok.example.com,${junk}`), junk).toThrow(ConfigError);
      expect(() => origins(junk), junk).toThrow(
        /UHP_CORS_ORIGINS: must be \* or a comma-separated list of exact origins/,
      );
    }
    expect(() => origins(' , ')).toThrow(/must be \* or a comma-separated list/);
    expect(() => origins('https://ok.example.com, https://app.example.com/')).toThrow(
      /not an origin: "https:\/\/app\.example\.com\/"/,
    );
  });
});
