import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ConverterStatusRepository } from '@app/db';
import { eachSubject, type SubjectFactory } from './subject';

/**
 * A converter name no other test uses. The table is global (one row per converter name), so the
 * contract asserts only about its own names; `cleanup` removes every row named with this prefix.
 */
export const CONTRACT_CONVERTER_PREFIX = 'contract-converter-';
const converterName = () => `${CONTRACT_CONVERTER_PREFIX}${randomUUID()}`;

/** What ConverterAvailability and the workers' probes rely on from ConverterStatusRepository. */
export function converterStatusRepositoryContract(subject: SubjectFactory<ConverterStatusRepository>) {
  describe('ConverterStatusRepository contract', () => {
    const current = eachSubject(subject);

    it('available names converters last found usable within the age asked', async () => {
      const { repo } = current();
      const [usable, broken, old] = [converterName(), converterName(), converterName()];
      const now = new Date();
      await repo.save([
        { name: usable, available: true, reason: null },
        { name: broken, available: false, reason: 'missing binary' },
      ]);
      await repo.save([{ name: old, available: true, reason: null }], new Date(now.getTime() - 120_000));
      const found = await repo.available(60_000, new Date(now.getTime() + 1_000));
      expect(found.has(usable)).toBe(true);
      expect(found.has(broken)).toBe(false);
      expect(found.has(old)).toBe(false);
      expect((await repo.available(600_000, new Date(now.getTime() + 1_000))).has(old)).toBe(true);
    });

    it('a later save replaces what a converter was found to be', async () => {
      const { repo } = current();
      const name = converterName();
      const now = new Date();
      await repo.save([{ name, available: true, reason: null }], now);
      await repo.save([{ name, available: false, reason: 'crashed' }], now);
      expect((await repo.available(60_000, now)).has(name)).toBe(false);
      await repo.save([{ name, available: true, reason: null }], now);
      expect((await repo.available(60_000, now)).has(name)).toBe(true);
      await repo.save([]);
    });
  });
}
