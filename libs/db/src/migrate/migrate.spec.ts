import { describe, expect, it } from 'vitest';
import {
  findMigrationsDir,
  MigrationError,
  planMigrations,
  splitSchema,
  type AppliedMigration,
  type LocalMigration,
} from './migrate';

const local = (name: string, checksum = `sum-${name}`): LocalMigration => ({ name, checksum, sql: '' });
const row = (name: string, extra: Partial<AppliedMigration> = {}): AppliedMigration => ({
  migration_name: name,
  checksum: `sum-${name}`,
  finished_at: new Date(),
  rolled_back_at: null,
  ...extra,
});

describe('planMigrations', () => {
  it('applies what the table does not have, in folder order', () => {
    expect(planMigrations([local('1_a'), local('2_b'), local('3_c')], [row('1_a')]).map((m) => m.name)).toEqual([
      '2_b',
      '3_c',
    ]);
    expect(planMigrations([local('1_a')], [])).toHaveLength(1);
  });

  it('re-applies a migration marked rolled back, as prisma migrate deploy does', () => {
    expect(
      planMigrations([local('1_a')], [row('1_a', { rolled_back_at: new Date(), finished_at: null })]).map(
        (m) => m.name,
      ),
    ).toEqual(['1_a']);
  });

  it('lists every problem and applies nothing', () => {
    const plan = () =>
      planMigrations(
        [local('1_a', 'changed'), local('3_c')],
        [row('1_a'), row('2_b'), row('3_c', { finished_at: null })],
      );
    expect(plan).toThrow(MigrationError);
    expect(plan).toThrow(
      /1_a was modified after it was applied[\s\S]*2_b is applied to the database but missing[\s\S]*3_c failed or is still running/,
    );
  });
});

describe('splitSchema', () => {
  it("takes prisma's schema parameter out of the URL", () => {
    expect(splitSchema('postgresql://u:p@db:5432/app?schema=tenant&sslmode=disable')).toEqual({
      connectionString: 'postgresql://u:p@db:5432/app?sslmode=disable',
      schema: 'tenant',
    });
    expect(splitSchema('postgresql://u@db/app').schema).toBe('public');
    expect(() => splitSchema('not a url')).toThrow(MigrationError);
  });
});

describe('findMigrationsDir', () => {
  it('prefers MIGRATIONS_DIR, else walks up to libs/db/prisma/migrations', () => {
    expect(findMigrationsDir('/nowhere', { MIGRATIONS_DIR: '/x/y' })).toBe('/x/y');
    expect(findMigrationsDir(__dirname, {})).toMatch(/libs\/db\/prisma\/migrations$/);
    expect(() => findMigrationsDir('/', {})).toThrow(/set MIGRATIONS_DIR/);
  });
});
