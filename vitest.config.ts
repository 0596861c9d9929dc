import { defineConfig } from 'vitest/config';

/**
 * Four tiers: unit specs beside the code (no I/O), the Helm chart rendered by a real helm (test/chart),
 * integration tests against the real Postgres, Redis and S3 server, end-to-end tests against the three
 * services started as processes.
 */
export default defineConfig({
  resolve: { tsconfigPaths: true },
  test: {
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['apps/**/*.spec.ts', 'libs/**/*.spec.ts', 'test/lint/**/*.spec.ts'] },
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
    ],
  },
});
