import { readdirSync, readFileSync } from 'node:fs';
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Test files that change what a worker process shares run in a process of their own: module mocks stay in the module
 * cache; fake timers reach into libraries loaded once per process (undici's request timers, after a file faked time,
 * timed out another file's requests to its own sandbox); and botbuilder keeps app tokens in a process-wide cache, so
 * a file signing in with its own token issuer (test/harness/openid.ts) would be sent another file's token.
 */
const ISOLATED = readdirSync('test', { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.test.ts'))
  .map((f) => `test/${f}`)
  .filter((f) => /useFakeTimers|vi\.(do)?mock\(|limits-helpers|harness\/openid/.test(readFileSync(f, 'utf8')))
  .sort();

export default defineConfig({
  test: {
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
    projects: [
      // The other files share their worker's loaded modules: loading botbuilder, restify and the bot again for every
      // file took half of the suite's time (import 160-187 s of ~300 s; 24 s shared, the suite 239 s, measured here).
      {
        extends: true,
        test: { name: 'shared', isolate: false, include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...ISOLATED] },
      },
      { extends: true, test: { name: 'isolated', include: ISOLATED } },
    ],
  },
});
