// The driver side of the bench's child processes: fork a child under tsx, wait until it is ready, ask it for its
// counters over IPC, read its peak RSS from /proc, stop it (and only it) at the end.
import { fork, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { childEntry, ROOT } from './build.js';
import { GcTally } from './gcTrace.js';
import { isRecord, text } from './json.js';

export { ROOT };

interface Pending {
  resolve(v: unknown): void;
  reject(e: Error): void;
}

export interface LogTally {
  /** Lines by pino level label (warn, error, fatal...). */
  byLevel: Record<string, number>;
  /** The last warn-or-worse lines (message only). */
  last: string[];
}

export class Child<Info extends Record<string, unknown> = Record<string, unknown>> {
  private seq = 0;
  private readonly pending = new Map<number, Pending>();
  private exited = false;
  stderr = '';

  private constructor(
    readonly name: string,
    readonly proc: ChildProcess,
    readonly info: Info,
    /** Its log lines, tallied by level, since it was forked. */
    readonly logs: LogTally,
    /** V8's collections, summed from its `--trace-gc-nvp` lines (BENCH_GC_TRACE=1; bots only). */
    readonly gc: GcTally,
  ) {}

  get pid(): number {
    if (this.proc.pid === undefined) throw new Error(`${this.name} has no pid (fork failed)`);
    return this.proc.pid;
  }

  /**
   * Forks `entry` (a compiled bench/children file, see build.ts) with exactly `env` (plus PATH and HOME), under the
   * node flags `nodeFlags` (billbridge's are those of `npm start`, see startFlags).
   */
  static async start<I extends Record<string, unknown>>(
    name: string,
    entry: string,
    env: Record<string, string>,
    timeoutMs = 60_000,
    nodeFlags = ['--disable-warning=DEP0111'],
  ): Promise<Child<I>> {
    // BENCH_GC_TRACE=1: the bots print V8's --trace-gc-nvp lines, summed into `gc` below.
    const traceGc = name.includes('bot') && Boolean(process.env.BENCH_GC_TRACE);
    const proc = fork(entry, [], {
      cwd: ROOT,
      // BENCH_BOT_ENV ("NAME=value NAME2=value"): more environment for the bots (e.g. MALLOC_ARENA_MAX, for a figure).
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...env,
        ...(name.includes('bot') ? envPairs(process.env.BENCH_BOT_ENV) : {}),
        ...(name.includes('bot') && !name.includes('echo') && process.env.BENCH_ALLOC_DIR
          ? { BENCH_ALLOC_DIR: process.env.BENCH_ALLOC_DIR }
          : {}),
      },
      // Compiled JavaScript, no TypeScript loader: the process holds what `npm start` would.
      execArgv: [
        ...nodeFlags,
        ...(traceGc ? ['--trace-gc-nvp'] : []),
        ...(name.includes('bot') && process.env.BENCH_BOT_EXEC_ARGV ? process.env.BENCH_BOT_EXEC_ARGV.split(/\s+/).filter(Boolean) : []),
        ...(process.env.BENCH_PROFILE_ALL && process.env.BENCH_PROFILE_DIR && name.includes('bot')
          ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}/${name.replace(/\W+/g, '-')}`]
          : []),
      ],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      serialization: 'advanced',
    });
    // Set once the child is ready; output before then is kept in `early`.
    const started: { child?: Child<I> } = {};
    const early: { stderr: string } = { stderr: '' };
    let buffered = '';
    const tally: LogTally = { byLevel: {}, last: [] };
    const gc = new GcTally();
    // BENCH_LOG_DIR: keep each child's log lines in a file there (for looking into a figure).
    const logFile = process.env.BENCH_LOG_DIR
      ? join(process.env.BENCH_LOG_DIR, `${name.replace(/\W+/g, '-')}-${Date.now()}.log`)
      : undefined;
    if (logFile) mkdirSync(dirname(logFile), { recursive: true });
    const { stdout, stderr } = proc;
    if (!stdout || !stderr) throw new Error(`${name} was forked without piped stdout and stderr`);
    stdout.on('data', (d: Buffer) => {
      if (logFile) appendFileSync(logFile, d);
      buffered += d.toString();
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (!(traceGc && gc.add(line))) countLogLine(tally, line);
      }
    });
    stderr.on('data', (d: Buffer) => {
      early.stderr = (early.stderr + d.toString()).slice(-64_000);
      if (started.child) started.child.stderr = early.stderr;
    });
    const info = await new Promise<I>((resolve, reject) => {
      const timer = setTimeout(() => {
        proc.kill('SIGKILL');
        reject(new Error(`${name} did not start within ${timeoutMs} ms: ${early.stderr.slice(-2000)}`));
      }, timeoutMs);
      proc.on('message', function onReady(msg: unknown) {
        if (isRecord(msg) && msg.ready) {
          clearTimeout(timer);
          proc.off('message', onReady);
          const { ready: _r, ...rest } = msg;
          // The child's ready() sends its own info type (SandboxInfo, BotInfo), built from what it just started.
          resolve(rest as I);
        }
      });
      proc.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`${name} exited (${code ?? signal}) before it was ready: ${early.stderr.slice(-2000)}`));
      });
    });
    const child = new Child<I>(name, proc, info, tally, gc);
    started.child = child;
    child.stderr = early.stderr;
    proc.on('message', (msg: unknown) => child.onMessage(msg));
    proc.on('exit', () => {
      child.exited = true;
      for (const p of child.pending.values()) p.reject(new Error(`${name} exited`));
      child.pending.clear();
    });
    return child;
  }

  private onMessage(msg: unknown): void {
    if (!isRecord(msg) || typeof msg.id !== 'number') return;
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if (msg.ok) p.resolve(msg.result);
    else p.reject(new Error(`${this.name}: ${typeof msg.error === 'string' ? msg.error : 'failed'}`));
  }

  call<T = unknown>(cmd: string, args?: unknown, timeoutMs = 60_000): Promise<T> {
    if (this.exited) return Promise.reject(new Error(`${this.name} is not running`));
    const id = ++this.seq;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${this.name} did not answer ${cmd} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v as T);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.proc.send({ id, cmd, args });
    });
  }

  /** Peak resident set size (VmHWM) and current RSS of the child, bytes, read by the driver from /proc. */
  memory(): { peakRss: number; rss: number } | undefined {
    try {
      const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
      const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)\\s+kB`).exec(status)?.[1] ?? 'NaN') * 1024;
      return { peakRss: kb('VmHWM'), rss: kb('VmRSS') };
    } catch {
      return undefined;
    }
  }

  /** CPU time (user + system, all threads) the child has used so far, ms, from /proc/<pid>/stat. */
  cpuMs(): number {
    return processCpuMs(this.pid);
  }

  /** Asks the child to close cleanly; SIGKILLs this child (by pid) if it has not exited after `graceMs`. */
  async stop(graceMs = 15_000): Promise<void> {
    if (this.exited) return;
    const exited = new Promise<void>((resolve) => this.proc.once('exit', () => resolve()));
    this.call('stop', undefined, graceMs).catch(() => undefined);
    const timer = setTimeout(() => {
      if (!this.exited) this.proc.kill('SIGKILL');
    }, graceMs);
    await exited;
    clearTimeout(timer);
  }
}

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ: 100 on Linux). */
const USER_HZ = 100;

/** utime + stime of a process (all its threads), ms; NaN where /proc is not available. */
function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces; fields after it are space-separated.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / USER_HZ;
  } catch {
    return Number.NaN;
  }
}

function countLogLine(tally: LogTally, line: string): void {
  if (!line.startsWith('{')) return;
  try {
    const rec: unknown = JSON.parse(line);
    if (!isRecord(rec)) return;
    const level =
      typeof rec.level === 'number'
        ? (({ 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' } as Record<number, string>)[rec.level] ??
          String(rec.level))
        : String(rec.level);
    tally.byLevel[level] = (tally.byLevel[level] ?? 0) + 1;
    if (level === 'warn' || level === 'error' || level === 'fatal') {
      // pino writes an error as { type, message, stack }.
      const err = typeof rec.err === 'string' ? rec.err : text(rec.err, 'message');
      tally.last.push(`${level}: ${text(rec, 'msg') ?? ''}${err ? ` (${err.slice(0, 160)})` : ''}`);
      if (tally.last.length > 20) tally.last.shift();
    }
  } catch {
    // not JSON
  }
}

export interface SandboxInfo extends Record<string, unknown> {
  url: string;
  baseUrl: string;
  eventsBaseUrl: string;
  credentials: { devKey: string; username: string; password: string; orgId: string; spendApiToken: string };
  pid: number;
}

export interface SandboxOptions {
  latencyMs: number;
  invoices: number;
  bills: number;
  clock?: { epoch: number; speed: number };
  /** Raise BILL's limits (the naive baseline would otherwise be refused long before it finishes). */
  hourlyBudget?: number;
  loginsPerHour?: number;
}

export function startSandboxProcess(name: string, o: SandboxOptions): Promise<Child<SandboxInfo>> {
  const env: Record<string, string> = {
    BENCH_SANDBOX_LATENCY_MS: String(o.latencyMs),
    BENCH_SANDBOX_INVOICES: String(o.invoices),
    BENCH_SANDBOX_BILLS: String(o.bills),
  };
  if (o.clock) {
    env.BENCH_CLOCK_EPOCH = String(o.clock.epoch);
    env.BENCH_CLOCK_SPEED = String(o.clock.speed);
  }
  if (o.hourlyBudget) env.BENCH_SANDBOX_HOURLY = String(o.hourlyBudget);
  if (o.loginsPerHour) env.BENCH_SANDBOX_LOGINS = String(o.loginsPerHour);
  return Child.start<SandboxInfo>(name, childEntry('sandbox'), env, 120_000);
}

export interface BotInfo extends Record<string, unknown> {
  url: string;
  pid: number;
  orgId: string;
}

function envPairs(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (text ?? '').split(/\s+/).filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq > 0) out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

export interface BotOptions {
  sandbox: SandboxInfo;
  stateDir: string;
  logLevel: string;
  clock?: { epoch: number; speed: number };
  /** More environment (limits, cache bounds). */
  env?: Record<string, string>;
}

/** The node flags `npm start` runs billbridge with (package.json's start script, up to the script it runs). */
export function startFlags(): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts?: { start?: string } };
  const words = (pkg.scripts?.start ?? '').split(/\s+/).filter(Boolean);
  if (words[0] !== 'node') throw new Error(`package.json's start script does not run node: ${pkg.scripts?.start}`);
  const flags: string[] = [];
  for (const w of words.slice(1)) {
    if (!w.startsWith('-')) break;
    flags.push(w);
  }
  return flags;
}

/** billbridge pointed at the sandbox process as if it were BILL (the four BILL_* credentials set), run as `npm start` runs it. */
export function startBotProcess(name: string, o: BotOptions): Promise<Child<BotInfo>> {
  const c = o.sandbox.credentials;
  const env: Record<string, string> = {
    NODE_ENV: 'development',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: o.logLevel,
    STATE_DIR: o.stateDir,
    BILL_BASE_URL: o.sandbox.baseUrl,
    BILL_SPEND_BASE_URL: o.sandbox.baseUrl,
    BILL_EVENTS_BASE_URL: o.sandbox.eventsBaseUrl,
    BILL_DEV_KEY: c.devKey,
    BILL_USERNAME: c.username,
    BILL_PASSWORD: c.password,
    BILL_ORG_ID: c.orgId,
    BILL_SPEND_API_TOKEN: c.spendApiToken,
    ...o.env,
  };
  if (o.clock) {
    env.BENCH_CLOCK_EPOCH = String(o.clock.epoch);
    env.BENCH_CLOCK_SPEED = String(o.clock.speed);
  }
  return Child.start<BotInfo>(name, childEntry('bot'), env, 60_000, startFlags());
}

/**
 * The botbuilder echo bot. By default under node's own flags (the overhead scenario's baseline); `nodeFlags` and
 * `env` run it as billbridge is run instead (the memory scenario's baseline: the same flags, the same NODE_OPTIONS).
 */
export function startEchoProcess(
  name = 'echo bot',
  o: { nodeFlags?: string[]; env?: Record<string, string> } = {},
): Promise<Child<BotInfo>> {
  return Child.start<BotInfo>(name, childEntry('echo'), { NODE_ENV: 'development', ...o.env }, 60_000, o.nodeFlags);
}
