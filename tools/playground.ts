// `npm run playground`: the bot in local mode on the embedded BILL sandbox, and Microsoft 365 Agents Playground (a
// Teams-like page) pointed at it, signed in as a billbridge admin. Ctrl-C stops both.
import { join } from 'node:path';
import type { BillbridgeApp } from '../src/app.js';
import { errorMessage } from '../src/errors.js';
import { checkPortFree, PLAYGROUND_TEAM, PLAYGROUND_USER, startPlayground, type RunningPlayground } from './agentsPlayground.js';
import { commandLine } from './args.js';

const HELP = `billbridge playground — talk to the bot in Microsoft 365 Agents Playground, a Teams-like page.

Usage: npm run playground -- [--port 56150] [--bot-port 3978] [--open]

  --port       the Playground's port (default 56150)
  --bot-port   the bot's port (default PORT or 3978)
  --open       open the page in the system browser

The bot runs in local mode (no app id, no inbound authentication, on 127.0.0.1 only) against the embedded BILL
sandbox, with its state under STATE_DIR/playground (default .data/playground); .env is not read. LOG_LEVEL
(default warn), BOT_TIMEZONE, BOT_LOCALE and SANDBOX_* are passed on.`;

const { values, fail, whole } = commandLine('billbridge playground', HELP, {
  port: { type: 'string' },
  'bot-port': { type: 'string' },
  open: { type: 'boolean', default: false },
});
const playgroundPort = whole('port', 56150, 65_535);
const botPort = whole('bot-port', Number(process.env.PORT ?? 3978), 65_535);
if (playgroundPort === 0 || botPort === 0) fail('ports must be fixed numbers: the page and the bot find each other by them');
if (playgroundPort === botPort) fail('--port and --bot-port must differ');

const home = join(process.env.STATE_DIR ?? '.data', 'playground');
const passedOn = ['BOT_TIMEZONE', 'BOT_LOCALE', 'SANDBOX_LATENCY_MS', 'SANDBOX_INVOICES', 'SANDBOX_BILLS'];

let app: BillbridgeApp | undefined;
let playground: RunningPlayground | undefined;
let stopping = false;

async function stop(code: number): Promise<never> {
  stopping = true;
  await playground?.stop();
  await app?.close();
  process.exit(code);
}

try {
  await checkPortFree(botPort, 'the bot', '--bot-port');
  await checkPortFree(playgroundPort, 'the Playground', '--port');
  // Loaded once the ports are known free: a taken port is said at once, not after the whole bot has loaded.
  const [{ buildApp }, { loadConfig }] = await Promise.all([import('../src/app.js'), import('../src/config.js')]);
  const config = loadConfig({
    ...Object.fromEntries(passedOn.map((name) => [name, process.env[name]])),
    PORT: String(botPort),
    HOST: '127.0.0.1',
    STATE_DIR: join(home, 'bot'),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    ADMIN_AAD_OBJECT_IDS: PLAYGROUND_USER.aadObjectId,
  });
  app = await buildApp(config);
  const botUrl = await app.listen();
  playground = await startPlayground({
    endpoint: `${botUrl}/api/messages`,
    port: playgroundPort,
    dir: join(home, 'agents-playground'),
    openBrowser: values.open === true,
  });
  // Ctrl-C in a terminal reaches the whole process group: the Playground ending on that SIGINT is our stop, not a crash.
  playground.child.once('exit', (code, signal) => {
    if (stopping || signal === 'SIGINT') return;
    process.stderr.write(`billbridge playground: the Playground stopped (exit ${code}); stopping the bot\n`);
    void stop(1);
  });
  console.log(`
  Playground: ${playground.url}
  Bot:        ${botUrl}/api/messages (local mode, embedded BILL sandbox: simulated data)

  You are ${PLAYGROUND_USER.name}, a billbridge admin. In Personal Chat type "help" or "bills due"; in
  ${PLAYGROUND_TEAM.name} › General or ${PLAYGROUND_TEAM.channel}, "@billbridge bills due". Message extensions: the + in the
  message box. Ctrl-C stops both.
`);
} catch (err) {
  process.stderr.write(`billbridge playground: ${errorMessage(err)}\n`);
  await stop(1);
}

process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));
