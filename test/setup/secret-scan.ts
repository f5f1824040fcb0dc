// vitest setupFiles: after each test file, fail it when any configured secret, sandbox-issued sessionId or
// minted token appears in any log line captured by LogCapture (every startBot() bot registers its sources).
import { afterAll, afterEach } from 'vitest';
import { clearRegistered, collectSecrets, describeLeaks, scanRegistered } from '../harness/secretScan.js';

// Sources can forget values (a logged-out session leaves the bot's registry), so collect as the file goes.
afterEach(async () => {
  await collectSecrets();
});

// Registered before the test file's own hooks, so it runs after them (vitest runs after-hooks as a stack):
// the bots are closed and every line they wrote is in.
afterAll(async () => {
  const leaks = await scanRegistered();
  clearRegistered();
  if (leaks.length > 0) throw new Error(describeLeaks(leaks));
});
