import { describe, expect, it } from 'vitest';
import { gatewayConfig } from '../../../../test/fakes/gateway';
import { ConcurrencyLimits } from './concurrency-limits';

describe('ConcurrencyLimits', () => {
  it('refuses a principal past its limit with 429 and Retry-After, leaving others untouched; a slot comes back once', () => {
    const limits = new ConcurrencyLimits(gatewayConfig({ UHP_MAX_CONCURRENT_DOWNLOADS: '2' }));
    const first = limits.acquire('alice', 'downloads');
    limits.acquire('alice', 'downloads');
    expect(() => limits.acquire('alice', 'downloads')).toThrow(
      expect.objectContaining({ code: 'rate_limited', status: 429, headers: { 'retry-after': '1' } }),
    );
    expect(() => limits.acquire('bob', 'downloads')).not.toThrow();
    expect(() => limits.acquire('alice', 'uploads')).not.toThrow();
    first();
    first();
    expect(limits.inUse('alice', 'downloads')).toBe(1);
    expect(() => limits.acquire('alice', 'downloads')).not.toThrow();
  });
});
