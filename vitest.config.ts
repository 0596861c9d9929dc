import { defineConfig } from 'vitest/config';

/**
 * Four tiers run by `npm test`: unit specs beside the code (no I/O), the Helm chart rendered by a real helm
 * (test/chart), integration tests against the real Postgres, Redis and S3 server, end-to-end tests against the
 * three services started as processes. Two more run on their own: `faults` (`npm run test:faults`:
 * dependencies and services killed under load, against private Postgres and Redis instances) and `fuzz`
 * (`npm run fuzz`: seeded hostile requests).
 */
export default defineConfig({
  resolve: { tsconfigPaths: true },
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: [
            'apps/**/*.spec.ts',
            'libs/**/*.spec.ts',
            'test/lint/**/*.spec.ts',
            'test/contracts/**/*.spec.ts',
            'bench/**/*.spec.mjs',
          ],
        },
      },
      {
        extends: true,
        // The Helm chart (k8s/charts/uhp-files) rendered by a real helm; no cluster, no services.
        test: { name: 'chart', include: ['test/chart/**/*.test.ts'], testTimeout: 60_000 },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/integration.setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/support/stack.setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'faults',
          include: ['test/faults/**/*.test.ts'],
          testTimeout: 150_000,
          hookTimeout: 240_000,
          fileParallelism: false,
        },
      },
      {
        extends: true,
        test: { name: 'fuzz', include: ['test/fuzz/**/*.test.ts'], testTimeout: 900_000, hookTimeout: 240_000 },
      },
    ],
  },
});
