import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

/**
 * Tests against the compose stack that test/containers/run.sh (`npm run test:containers`) brings up;
 * they do not start anything themselves. Kept out of the root vitest.config.ts, so `npm test` never
 * collects them.
 */
export default defineConfig({
  root: resolve(__dirname, '../..'),
  resolve: { tsconfigPaths: true },
  test: {
    name: 'containers',
    include: ['test/containers/**/*.test.ts'],
    testTimeout: 180_000,
    hookTimeout: 180_000,
    fileParallelism: false,
  },
});
