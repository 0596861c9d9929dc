import { describe, expect, it } from 'vitest';
import { canComposeByCopy } from './multipart-upload';

const MiB = 1024 * 1024;

describe('canComposeByCopy', () => {
  it('joins by part copies when every source but the last is at least 5 MiB', () => {
    expect(canComposeByCopy([64 * MiB, 64 * MiB, 1])).toBe(true);
    expect(canComposeByCopy([3 * MiB])).toBe(true);
  });

  it('falls back to a streamed concatenation for a small part in the middle, or past 10,000 parts', () => {
    expect(canComposeByCopy([64 * MiB, 4 * MiB, 64 * MiB])).toBe(false);
    expect(canComposeByCopy(new Array(10_001).fill(5 * MiB))).toBe(false);
    expect(canComposeByCopy([])).toBe(false);
  });
});
