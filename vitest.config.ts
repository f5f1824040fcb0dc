import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Fails a test file whose captured logs contain a secret (test/harness/secretScan.ts).
    setupFiles: ['test/setup/secret-scan.ts'],
    reporters: ['default'],
  },
});
