import { createHash, randomBytes } from 'node:crypto';

/** Keys are 192-bit random: a plain SHA-256 is enough to store them (no slow KDF needed). */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/**
 * The visible part of a key, for listing and revoking without showing the secret: at most 8
 * characters, and never more than a quarter of the key.
 */
export function apiKeyPrefix(key: string): string {
  return key.slice(0, Math.min(8, Math.floor(key.length / 4)));
}

export function generateApiKey(): string {
  return `sk_uhp_${randomBytes(24).toString('base64url')}`;
}

const PRINCIPAL_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** Parses UHP_API_KEYS: "alice=sk_test_alice,bob=sk_test_bob". Throws on a malformed entry. */
export function parseBootstrapKeys(value: string): { principal: string; key: string }[] {
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const at = entry.indexOf('=');
      const principal = entry.slice(0, at).trim();
      const key = entry.slice(at + 1).trim();
      if (at <= 0 || !PRINCIPAL_NAME.test(principal) || key.length < 8 || /\s/.test(key)) {
        throw new Error(
          `UHP_API_KEYS: "${principal || entry.slice(0, 10)}…" is not name=key ` +
            '(name of A-Za-z0-9._-, key of 8+ non-space characters)',
        );
      }
      return { principal, key };
    });
}

export const TASK_TOKEN_PREFIX = 'uhp_task_';

/** A task token: handed to an agent for one response; stored hashed like keys. */
export function generateTaskToken(): string {
  return `${TASK_TOKEN_PREFIX}${randomBytes(24).toString('base64url')}`;
}
