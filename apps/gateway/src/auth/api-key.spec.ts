import { describe, expect, it } from 'vitest';
import { apiKeyPrefix, generateApiKey, hashApiKey, parseBootstrapKeys } from './api-key';

describe('api keys', () => {
  it('parses the bootstrap list', () => {
    expect(parseBootstrapKeys(' alice=sk_test_alice , bob=sk_test_bob,')).toEqual([
      { principal: 'alice', key: 'sk_test_alice' },
      { principal: 'bob', key: 'sk_test_bob' },
    ]);
    expect(parseBootstrapKeys('')).toEqual([]);
  });

  it('rejects malformed entries', () => {
    expect(() => parseBootstrapKeys('alice')).toThrow(/UHP_API_KEYS/);
    expect(() => parseBootstrapKeys('=sk_test_alice')).toThrow(/UHP_API_KEYS/);
    expect(() => parseBootstrapKeys('alice=short')).toThrow(/UHP_API_KEYS/);
  });

  it('hashes without keeping the key and shows only a prefix', () => {
    const key = generateApiKey();
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(key)).not.toContain(key);
    expect(key.startsWith(apiKeyPrefix(key))).toBe(true);
    expect(apiKeyPrefix(key)).toHaveLength(8);
  });

  it('shows at most 8 characters, and never more than a quarter of a short key', () => {
    expect(apiKeyPrefix('sk_test_alice')).toBe('sk_');
    expect(apiKeyPrefix('sk_test_alice_0123456789')).toBe('sk_tes');
    for (let length = 8; length <= 80; length++) {
      const prefix = apiKeyPrefix('k'.repeat(length));
      expect(prefix.length).toBeLessThanOrEqual(Math.min(8, length / 4));
    }
  });
});
