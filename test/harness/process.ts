// Runs the real bot as its own node process (src/index.ts, as in production) for kill -9 and restart tests.
import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { get } from './net.js';

export const repo = resolve(import.meta.dirname, '../..');
const spawned: ChildProcess[] = [];

export interface BotProcess {
  child: ChildProcess;
  /** http://127.0.0.1:PORT it listens on. */
  url: string;
  /** The organisation it serves: the embedded sandbox's demo one (from its start-up log), else BILL_ORG_ID. */
  orgId: string;
  /** Its stdout lines and stderr chunks so far. */
  output: string[];
  exited: Promise<number | null>;
}

export interface SpawnedBot {
  child: ChildProcess;
  output: string[];
  exited: Promise<number | null>;
  /** Resolves once it listens and /readyz answers 200; rejects with its output if it exits first or is not ready in time. */
  started: Promise<BotProcess>;
}

/**
 * `node --import <tsx loader> file ...args` in `cwd` with only `env` (and PATH): node itself, not the tsx wrapper, which would
 * leave its node child running after a SIGKILL. killSpawned() ends whatever is still running.
 */
export function spawnTsx(file: string, cwd: string, env: Record<string, string>, args: string[] = []): ChildProcess {
  const loader = pathToFileURL(join(repo, 'node_modules/tsx/dist/loader.mjs')).href;
  const child = spawn(process.execPath, ['--disable-warning=DEP0111', '--import', loader, file, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  spawned.push(child);
  return child;
}

/** SIGKILLs every process spawnTsx started that is still running (for afterAll). */
export function killSpawned(): void {
  for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}

/**
 * Starts the bot process on `stateDir` in `cwd` (an empty directory, so no developer .env is read), with `env` added
 * to a test configuration (a free port on 127.0.0.1, JSON logs at info).
 */
export function spawnBotProcess(cwd: string, stateDir: string, env: Record<string, string> = {}, readyWithinMs = 30_000): SpawnedBot {
  const child = spawnTsx(join(repo, 'src/index.ts'), cwd, {
    HOME: process.env.HOME ?? cwd,
    PORT: '0',
    HOST: '127.0.0.1',
    STATE_DIR: stateDir,
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    ...env,
  });
  const output: string[] = [];
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  let timer: NodeJS.Timeout | undefined;
  const started = new Promise<BotProcess>((done, fail) => {
    let orgId = env.BILL_ORG_ID ?? '';
    let buffered = '';
    // A bound on waiting (a rejection naming what the process said), not a sleep.
    timer = setTimeout(() => fail(new Error(`bot was not ready within ${readyWithinMs} ms: ${output.join('\n')}`)), readyWithinMs);
    child.stdout!.on('data', (d: Buffer) => {
      buffered += d.toString('utf8');
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        output.push(line);
        let rec: { msg?: string; url?: string; orgId?: string };
        try {
          rec = JSON.parse(line) as typeof rec;
        } catch {
          continue;
        }
        if (rec.orgId && rec.msg?.startsWith('BILL sandbox at')) orgId = rec.orgId;
        if (rec.msg === 'billbridge listening' && rec.url) {
          const url = rec.url;
          void get(`${url}/readyz`).then(
            (r) =>
              r.status === 200 ? done({ child, url, orgId, output, exited }) : fail(new Error(`/readyz answered ${r.status}: ${r.text}`)),
            fail,
          );
        }
      }
    });
    child.stderr!.on('data', (d: Buffer) => output.push(d.toString('utf8')));
    child.on('exit', (code) => fail(new Error(`bot exited with ${code} before it was ready: ${output.join('\n')}`)));
  });
  // The timer goes once the outcome is known; callers that expect an early exit need not await `started`.
  void started.then(
    () => clearTimeout(timer),
    () => clearTimeout(timer),
  );
  return { child, output, exited, started };
}
