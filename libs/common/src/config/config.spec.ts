import { describe, expect, it } from 'vitest';
import {
  DEV_STORAGE_TOKEN,
  fileLimitsOf,
  gatewayConfigSchema,
  maxRequestBytesOf,
  requestBytesFloorOf,
  staticS3CredentialsOf,
  storageConfigSchema,
  unsafeSettingsOf,
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

/** The one line loadConfig refuses a start with, for each problem. */
function refusalsOf(run: () => unknown): string[] {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('the configuration was accepted');
}

describe('UHP_ENV=production', () => {
  const TOKEN = 'a-random-storage-token-of-40-characters!!';
  const SAFE_GATEWAY = {
    UHP_ENV: 'production',
    UHP_PUBLIC_BASE_URL: 'https://files.example.com',
    STORAGE_TOKEN: TOKEN,
  };

  it('is development by default and refuses any other word', () => {
    expect(loadConfig(gatewayConfigSchema, {}).UHP_ENV).toBe('development');
    expect(refusalsOf(() => loadConfig(workerConfigSchema, { UHP_ENV: 'prod' }))).toEqual([
      'UHP_ENV: must be development or production ("prod")',
    ]);
  });

  it('starts every service with a public URL, a long storage token and /metrics off the API port', () => {
    expect(() => loadConfig(gatewayConfigSchema, SAFE_GATEWAY)).not.toThrow();
    for (const schema of [storageConfigSchema, workerConfigSchema])
      expect(() => loadConfig(schema, { UHP_ENV: 'production', STORAGE_TOKEN: TOKEN })).not.toThrow();
  });

  it('refuses an unset UHP_PUBLIC_BASE_URL', () => {
    expect(refusalsOf(() => loadConfig(gatewayConfigSchema, { ...SAFE_GATEWAY, UHP_PUBLIC_BASE_URL: '' }))).toEqual([
      "UHP_PUBLIC_BASE_URL: is unset, so download and upload URLs in answers point to this machine's loopback; " +
        'set it to the URL clients reach the gateway at (e.g. https://files.example.com) (UHP_ENV=production) (unset)',
    ]);
  });

  it.each([
    'http://localhost:8080',
    'http://files.localhost',
    'http://127.0.0.1:8080',
    'http://127.1.2.3',
    'http://[::1]:8080',
    'http://[::ffff:127.0.0.1]',
    'http://0.0.0.0:8080',
    'http://2130706433',
  ])('refuses UHP_PUBLIC_BASE_URL=%s, a loopback address', (url) => {
    expect(refusalsOf(() => loadConfig(gatewayConfigSchema, { ...SAFE_GATEWAY, UHP_PUBLIC_BASE_URL: url }))).toEqual([
      'UHP_PUBLIC_BASE_URL: points to a loopback address no client elsewhere can reach; set it to the URL clients ' +
        `reach the gateway at (e.g. https://files.example.com) (UHP_ENV=production) (${JSON.stringify(url)})`,
    ]);
  });

  it('takes a public URL whose name only looks local', () => {
    for (const url of ['https://localhost.example.com', 'http://10.0.0.7:8080', 'https://127-0-0-1.example.com'])
      expect(() => loadConfig(gatewayConfigSchema, { ...SAFE_GATEWAY, UHP_PUBLIC_BASE_URL: url })).not.toThrow();
  });

  it('refuses an unset or development STORAGE_TOKEN in every service, and hides the token', () => {
    for (const schema of [gatewayConfigSchema, storageConfigSchema, workerConfigSchema]) {
      const message =
        'STORAGE_TOKEN: is unset or the development token, which anyone can read in the source; set a random ' +
        'secret of at least 32 characters, the same on gateway, storage and workers (e.g. openssl rand -base64 36) ' +
        '(UHP_ENV=production)';
      expect(refusalsOf(() => loadConfig(schema, { ...SAFE_GATEWAY, STORAGE_TOKEN: '' }))).toEqual([
        `${message} (unset)`,
      ]);
      expect(refusalsOf(() => loadConfig(schema, { ...SAFE_GATEWAY, STORAGE_TOKEN: DEV_STORAGE_TOKEN }))).toEqual([
        `${message} (given (hidden))`,
      ]);
    }
  });

  it('refuses a STORAGE_TOKEN shorter than 32 characters, and takes one of exactly 32', () => {
    for (const schema of [gatewayConfigSchema, storageConfigSchema, workerConfigSchema]) {
      expect(refusalsOf(() => loadConfig(schema, { ...SAFE_GATEWAY, STORAGE_TOKEN: 'x'.repeat(31) }))).toEqual([
        'STORAGE_TOKEN: is shorter than 32 characters; set a random secret of at least 32 characters, the same on ' +
          'gateway, storage and workers (e.g. openssl rand -base64 36) (UHP_ENV=production) (given (hidden))',
      ]);
      expect(() => loadConfig(schema, { ...SAFE_GATEWAY, STORAGE_TOKEN: 'x'.repeat(32) })).not.toThrow();
    }
  });

  it('refuses /metrics on the public API port', () => {
    expect(refusalsOf(() => loadConfig(gatewayConfigSchema, { ...SAFE_GATEWAY, UHP_API_METRICS: 'true' }))).toEqual([
      'UHP_API_METRICS: serves /metrics on the public API port; set UHP_API_METRICS=false and scrape METRICS_PORT ' +
        'instead (UHP_ENV=production) ("true")',
    ]);
  });

  it('lists every refusal at once', () => {
    const problems = refusalsOf(() => loadConfig(gatewayConfigSchema, { UHP_ENV: 'production', UHP_API_METRICS: '1' }));
    expect(problems.map((problem) => problem.split(':')[0])).toEqual([
      'UHP_PUBLIC_BASE_URL',
      'UHP_API_METRICS',
      'STORAGE_TOKEN',
    ]);
  });

  it('development keeps each convenience and names it, one warning per relaxed default', () => {
    const config = loadConfig(gatewayConfigSchema, { UHP_API_METRICS: 'true' });
    expect(config.UHP_ENV).toBe('development');
    expect(unsafeSettingsOf('gateway', config).map((unsafe) => unsafe.variable)).toEqual([
      'UHP_PUBLIC_BASE_URL',
      'UHP_API_METRICS',
      'STORAGE_TOKEN',
    ]);
    expect(unsafeSettingsOf('storage', loadConfig(storageConfigSchema, {})).map((unsafe) => unsafe.variable)).toEqual([
      'STORAGE_TOKEN',
    ]);
    expect(unsafeSettingsOf('gateway', loadConfig(gatewayConfigSchema, SAFE_GATEWAY))).toEqual([]);
  });

  it('keeps /metrics off the API port by default, in development too', () => {
    expect(loadConfig(gatewayConfigSchema, {}).UHP_API_METRICS).toBe(false);
  });
});

describe('UHP_MAX_PENDING_UPLOAD_BYTES', () => {
  it('below UHP_MAX_FILE_BYTES refuses the start: no upload of the largest file would fit', () => {
    const env = { UHP_MAX_FILE_BYTES: '16777216' };
    expect(
      refusalsOf(() => loadConfig(gatewayConfigSchema, { ...env, UHP_MAX_PENDING_UPLOAD_BYTES: '16777215' })),
    ).toEqual([
      'UHP_MAX_PENDING_UPLOAD_BYTES: must be at least UHP_MAX_FILE_BYTES (16777216), so one upload of the largest ' +
        'file fits, or 0 to derive it; or lower UHP_MAX_FILE_BYTES ("16777215")',
    ]);
    for (const value of ['0', '16777216'])
      expect(
        loadConfig(gatewayConfigSchema, { ...env, UHP_MAX_PENDING_UPLOAD_BYTES: value }).UHP_MAX_PENDING_UPLOAD_BYTES,
      ).toBe(Number(value));
  });
});

describe('UHP_MAX_REQUEST_BYTES', () => {
  const KiB = 1024;

  it('0 derives the JSON body limit from the effective inline limit: its base64 size plus 64 KiB', () => {
    expect(maxRequestBytesOf(loadConfig(gatewayConfigSchema, { UHP_MAX_INLINE_FILE_BYTES: String(3 * KiB) }))).toBe(
      4 * KiB + 64 * KiB,
    );
    const capped = loadConfig(gatewayConfigSchema, {
      UHP_MAX_FILE_BYTES: String(3 * KiB),
      UHP_MAX_INLINE_FILE_BYTES: String(30 * KiB),
    });
    expect(maxRequestBytesOf(capped)).toBe(requestBytesFloorOf(3 * KiB));
  });

  it('is honoured exactly at or above that floor', () => {
    const env = { UHP_MAX_INLINE_FILE_BYTES: String(3 * KiB) };
    for (const limit of [68 * KiB, 1024 * KiB])
      expect(maxRequestBytesOf(loadConfig(gatewayConfigSchema, { ...env, UHP_MAX_REQUEST_BYTES: String(limit) }))).toBe(
        limit,
      );
  });

  it('below the floor refuses the start with the floor named, never raises it', () => {
    expect(
      refusalsOf(() =>
        loadConfig(gatewayConfigSchema, {
          UHP_MAX_INLINE_FILE_BYTES: String(3 * KiB),
          UHP_MAX_REQUEST_BYTES: String(68 * KiB - 1),
        }),
      ),
    ).toEqual([
      'UHP_MAX_REQUEST_BYTES: must be at least 69632 (the base64 size of the inline file limit plus 64 KiB), ' +
        'or 0 to derive it; or lower UHP_MAX_INLINE_FILE_BYTES ("69631")',
    ]);
  });
});
