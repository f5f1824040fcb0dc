import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two test files at a time: on CI's two cores vitest would run one (cores - 1), and most files wait on servers,
    // child processes and Redis rather than compute (the whole suite: 356 s with one, 209 s with two, measured here).
    maxWorkers: 2,
    // Fails a test file whose captured logs contain a secret (test/harness/secretScan.ts).
    setupFiles: ['test/setup/secret-scan.ts'],
    reporters: ['default'],
  },
});
