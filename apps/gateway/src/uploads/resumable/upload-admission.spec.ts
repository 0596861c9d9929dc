import { describe, expect, it } from 'vitest';
import { gatewayConfigSchema, loadConfig } from '@app/common';
import { maxPendingUploadBytes } from './upload-admission';

const GiB = 1024 ** 3;
const configWith = (env: Record<string, string>) => loadConfig(gatewayConfigSchema, env);

describe('the bytes a principal’s pending uploads may hold', () => {
  it('is twice the largest file by default: one file re-sent once', () => {
    expect(maxPendingUploadBytes(configWith({}))).toBe(2 * 64 * GiB);
    expect(maxPendingUploadBytes(configWith({ UHP_MAX_FILE_BYTES: String(10 * GiB) }))).toBe(20 * GiB);
  });

  it('derived, never falls below 1 GiB however small the file limit', () => {
    expect(maxPendingUploadBytes(configWith({ UHP_MAX_FILE_BYTES: String(8 * 1024 ** 2) }))).toBe(GiB);
  });

  it('is what UHP_MAX_PENDING_UPLOAD_BYTES says when set, below or above the derived value', () => {
    // Below the derived 1 GiB, and still room for one largest file (less refuses the start: config.spec.ts).
    const sixteenMiB = String(16 * 1024 ** 2);
    expect(
      maxPendingUploadBytes(configWith({ UHP_MAX_FILE_BYTES: sixteenMiB, UHP_MAX_PENDING_UPLOAD_BYTES: sixteenMiB })),
    ).toBe(16 * 1024 ** 2);
    expect(
      maxPendingUploadBytes(
        configWith({ UHP_MAX_FILE_BYTES: '1048576', UHP_MAX_PENDING_UPLOAD_BYTES: String(4 * GiB) }),
      ),
    ).toBe(4 * GiB);
  });
});
