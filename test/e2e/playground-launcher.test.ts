// `npm run playground` as a newcomer runs it: it prints the page to open, Ctrl-C stops the bot and the Playground, and
// a taken port is named instead of the Playground quietly moving to another one.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { checkPortFree } from '../../tools/agentsPlayground.js';
import { freePort, get } from '../harness/net.js';
import { killSpawned, repo, spawnTsx } from '../harness/process.js';

const home = mkdtempSync(join(tmpdir(), 'billbridge-launcher-'));

afterAll(() => {
  killSpawned();
  rmSync(home, { recursive: true, force: true });
});

function launch(port: number, botPort: number) {
  const child = spawnTsx(join(repo, 'tools/playground.ts'), home, { HOME: home, STATE_DIR: home }, [
    '--port',
    String(port),
    '--bot-port',
    String(botPort),
  ]);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

it('prints the Playground page, serves it against the bot, and Ctrl-C stops both', async () => {
  const [port, botPort] = [await freePort(), await freePort()];
  const run = launch(port, botPort);
  await expect.poll(run.stdout, { timeout: 45_000, interval: 200 }).toContain(`Playground: http://localhost:${port}`);
  expect(run.stdout()).toContain(`http://127.0.0.1:${botPort}/api/messages`);
  expect((await get(`http://127.0.0.1:${port}/`)).text).toContain('Microsoft 365 Agents Playground');
  expect((await get(`http://127.0.0.1:${botPort}/readyz`)).status).toBe(200);

  run.child.kill('SIGINT');
  expect(await run.exited).toBe(0);
  await checkPortFree(port, 'the Playground', '--port');
  await checkPortFree(botPort, 'the bot', '--bot-port');
}, 60_000);

it('names the taken port and starts nothing when the Playground port is in use', async () => {
  const taken = createServer();
  await new Promise<void>((done) => taken.listen(0, () => done()));
  const port = (taken.address() as { port: number }).port;
  const botPort = await freePort();
  try {
    const run = launch(port, botPort);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain(`port ${port} (the Playground) is taken: stop what uses it or pick another with --port`);
    await checkPortFree(botPort, 'the bot', '--bot-port');
  } finally {
    await new Promise((done) => taken.close(done));
  }
}, 60_000);
