import { describe, expect, it, vi } from 'vitest';
import type { AppLogger } from '@app/common';
import type { PrincipalRepository } from '@app/db';
import { gatewayConfig } from '../../../../test/fakes/gateway';
import { BootstrapKeys } from './auth';

/** BootstrapKeys over a repository holding `liveKeys` keys once the environment's are in place. */
function bootstrapWith(apiKeys: string, liveKeys: number) {
  const principals = {
    ensureKey: vi.fn().mockResolvedValue({ id: 'p' }),
    revokeBootstrapKeysExcept: vi.fn().mockResolvedValue(0),
    countLiveKeys: vi.fn().mockResolvedValue(liveKeys),
  };
  const logger = { info: vi.fn(), warn: vi.fn() };
  const keys = new BootstrapKeys(
    gatewayConfig({ UHP_API_KEYS: apiKeys }),
    principals as unknown as PrincipalRepository,
    logger as unknown as AppLogger,
  );
  return { keys, logger };
}

describe('BootstrapKeys', () => {
  it('warns at start, saying how to make one, while no API key exists', async () => {
    const { keys, logger } = bootstrapWith('', 0);
    await keys.onApplicationBootstrap();
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(logger.warn.mock.calls[0]![0]).toMatch(/^no API key exists yet.*npm run keys -- create <principal>/);
  });

  it('says nothing once a key exists, from the environment or the CLI', async () => {
    for (const [apiKeys, live] of [
      ['alice=sk_test_alice_0123456789', 1],
      ['', 3],
    ] as const) {
      const { keys, logger } = bootstrapWith(apiKeys, live);
      await keys.onApplicationBootstrap();
      expect(logger.warn).not.toHaveBeenCalled();
    }
  });
});
