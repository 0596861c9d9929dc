import { describe, expect, it } from 'vitest';
import type { AppliedMigration, LocalMigration } from './migrate';
import { missingMigrations } from './wait';

const local = (name: string): LocalMigration => ({ name, checksum: `sum-${name}`, sql: '' });
const row = (name: string, extra: Partial<AppliedMigration> = {}): AppliedMigration => ({
  migration_name: name,
  checksum: `sum-${name}`,
  finished_at: new Date(),
  rolled_back_at: null,
  ...extra,
});

describe('missingMigrations', () => {
  const folder = [local('1_a'), local('2_b'), local('3_c')];

  it('is empty when every local migration is applied, whatever else the database has', () => {
    expect(missingMigrations(folder, [row('1_a'), row('2_b'), row('3_c')])).toEqual([]);
    expect(missingMigrations(folder, [row('1_a'), row('2_b'), row('3_c'), row('4_newer')])).toEqual([]);
  });

  it('names what has no row, an unfinished or rolled-back row, or a row of another checksum', () => {
    expect(missingMigrations(folder, [])).toEqual(['1_a', '2_b', '3_c']);
    expect(
      missingMigrations(folder, [
        row('1_a', { finished_at: null }),
        row('2_b', { rolled_back_at: new Date() }),
        row('3_c', { checksum: 'edited' }),
      ]),
    ).toEqual(['1_a', '2_b', '3_c']);
    expect(missingMigrations(folder, [row('1_a'), row('2_b', { rolled_back_at: new Date() }), row('2_b')])).toEqual([
      '3_c',
    ]);
  });
});
