// Microsoft 365 Agents Playground (Microsoft's Teams emulator for bots) set up for billbridge: its mocked Teams (an
// admin user, a Finance team) and its process, for `npm run playground` and the end-to-end test.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { join } from 'node:path';

const require = createRequire(import.meta.url);

/** The person clicking around in the Playground: billbridge's admin (ADMIN_AAD_OBJECT_IDS) in local mode. */
export const PLAYGROUND_USER = { id: '29:playground-dana', name: 'Dana Lee', aadObjectId: '00000000-0000-4000-8000-0000000da1ee' };
/** Where the Playground's team lives; its General channel has the team's id, as in Teams. */
export const PLAYGROUND_TEAM = { name: 'Finance', channel: 'Payables' };

const person = (id: string, given: string, surname: string, aadObjectId: string) => {
  const mail = `${given.toLowerCase()}@contoso.example`;
  return { id, name: `${given} ${surname}`, userPrincipleName: mail, aadObjectId, givenName: given, surname, email: mail };
};

/**
 * The Playground's config file (its schema 0.1.1: exactly five more users, one team with one channel besides General).
 * Ids are GUIDs where Teams sends GUIDs, so billbridge's config accepts the user's as an admin id. JSON is YAML.
 */
function playgroundConfig(): string {
  const [given = '', surname = ''] = PLAYGROUND_USER.name.split(' ');
  return JSON.stringify(
    {
      version: '0.1.1',
      tenantId: '00000000-0000-4000-8000-00000000c0de',
      bot: { id: '28:billbridge', name: 'billbridge' },
      currentUser: person(PLAYGROUND_USER.id, given, surname, PLAYGROUND_USER.aadObjectId),
      users: [
        person('29:playground-sam', 'Sam', 'Ortiz', '00000000-0000-4000-8000-000000005a01'),
        person('29:playground-priya', 'Priya', 'Nair', '00000000-0000-4000-8000-000000005a02'),
        person('29:playground-jonas', 'Jonas', 'Berg', '00000000-0000-4000-8000-000000005a03'),
        person('29:playground-mei', 'Mei', 'Chen', '00000000-0000-4000-8000-000000005a04'),
        person('29:playground-omar', 'Omar', 'Haddad', '00000000-0000-4000-8000-000000005a05'),
      ],
      personalChat: { id: 'a:playground-personal-chat' },
      groupChat: { id: '19:playground-group@thread.v2', name: 'Month-end close' },
      team: {
        id: '19:playground-finance@thread.tacv2',
        name: PLAYGROUND_TEAM.name,
        aadGroupId: '00000000-0000-4000-8000-0000000f1a00',
        channels: [{ id: '19:playground-payables@thread.tacv2', name: PLAYGROUND_TEAM.channel }],
      },
    },
    null,
    2,
  );
}

/** Resolves when nothing listens on `port` (any interface, as the Playground binds); rejects with a clear message. */
export function checkPortFree(port: number, what: string, option: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          err.code === 'EADDRINUSE' ? `port ${port} (${what}) is taken: stop what uses it or pick another with ${option}` : err.message,
        ),
      ),
    );
    probe.listen(port, () => probe.close(() => resolve()));
  });
}

export interface RunningPlayground {
  /** The page to open: http://localhost:PORT */
  url: string;
  child: ChildProcess;
  /** Its output so far (for a failure message). */
  output: string[];
  /** Ends the process and resolves once it has exited. */
  stop(): Promise<void>;
}

export interface PlaygroundOptions {
  /** The bot's /api/messages URL. */
  endpoint: string;
  port: number;
  /** Where its config file and log go. */
  dir: string;
  /** Let the Playground open the system browser on its page. */
  openBrowser?: boolean;
  startWithinMs?: number;
}

/**
 * Starts the Playground on `port` against `endpoint` as a Teams client (channel msteams), telemetry off, and resolves
 * once it listens there. It falls back to a random port when `port` is taken, which this refuses: a page on another
 * port than the one printed would confuse.
 */
export function startPlayground(opts: PlaygroundOptions): Promise<RunningPlayground> {
  mkdirSync(opts.dir, { recursive: true });
  const configPath = join(opts.dir, '.m365agentsplayground.yml');
  writeFileSync(configPath, playgroundConfig());
  const cli = require.resolve('@microsoft/m365agentsplayground/cli.js');
  const args = [cli, '-e', opts.endpoint, '-c', 'msteams', '-p', String(opts.port), '--disable-telemetry'];
  const child = spawn(process.execPath, args, {
    cwd: opts.dir,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? opts.dir,
      M365_AGENTS_PLAYGROUND_CONFIG_PATH: configPath,
      M365_AGENTS_PLAYGROUND_LOGFILE: join(opts.dir, 'playground.log'),
      ...(opts.openBrowser ? {} : { TEAMSAPPTESTER_BROWSER: 'none' }),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  return new Promise((resolve, reject) => {
    const fail = (message: string) => {
      clearTimeout(timer);
      void stop().then(() => reject(new Error(`${message}\n${output.join('')}`)));
    };
    // A bound on waiting that names what the process said, not a sleep.
    const timer = setTimeout(
      () => fail(`the Playground did not start within ${opts.startWithinMs ?? 30_000} ms`),
      opts.startWithinMs ?? 30_000,
    );
    child.stderr.on('data', (d: Buffer) => output.push(d.toString('utf8')));
    child.stdout.on('data', (d: Buffer) => {
      const text = d.toString('utf8');
      output.push(text);
      const listening = /Listening on (\d+)/.exec(text);
      if (!listening) return;
      if (Number(listening[1]) !== opts.port) {
        fail(`the Playground took port ${listening[1]} because ${opts.port} was taken`);
        return;
      }
      clearTimeout(timer);
      resolve({ url: `http://localhost:${opts.port}`, child, output, stop });
    });
    child.once('exit', (code) => fail(`the Playground exited with ${code} before it listened`));
  });
}
