// The child side of the bench's IPC: answers the driver's requests and says when it is ready.
import { readFileSync } from 'node:fs';
import type { Clock } from '../../src/infra/clock.js';

/** A command's handler; `args` comes over IPC from the driver, so it is read with `numberArg`/`stringArg`. */
export type Handler = (args: unknown) => unknown;

interface Request {
  id: number;
  cmd: string;
  args?: unknown;
}

/** The driver's request, or undefined for any other message on the channel. */
function readRequest(raw: unknown): Request | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const { id, cmd, args } = raw as Record<string, unknown>;
  if (typeof id !== 'number' || typeof cmd !== 'string') return undefined;
  return { id, cmd, args };
}

export function numberArg(args: unknown, cmd: string): number {
  if (typeof args !== 'number') throw new Error(`${cmd} takes a number, got ${typeof args}`);
  return args;
}

export function stringArg(args: unknown, cmd: string): string {
  if (typeof args !== 'string') throw new Error(`${cmd} takes a string, got ${typeof args}`);
  return args;
}

/** process.send, which exists only in a child started by fork(). */
function ipcSend(): NonNullable<typeof process.send> {
  if (!process.send) throw new Error('bench children run under fork() with an IPC channel');
  return process.send.bind(process);
}

/** Serves the handlers over the fork IPC channel; 'stop' runs `stop` then exits. Exits when the driver goes away. */
export function serve(handlers: Record<string, Handler>, stop: () => Promise<void>): void {
  const send = ipcSend();
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    const force = setTimeout(() => process.exit(code), 10_000);
    force.unref();
    try {
      await stop();
    } finally {
      process.exit(code);
    }
  };
  process.on('message', (raw: unknown) => {
    const req = readRequest(raw);
    if (!req) return;
    if (req.cmd === 'stop') {
      send({ id: req.id, ok: true, result: null }, () => void shutdown(0));
      return;
    }
    const handler = handlers[req.cmd];
    Promise.resolve()
      .then(() => {
        if (!handler) throw new Error(`unknown command ${req.cmd}`);
        return handler(req.args);
      })
      .then(
        (result) => send({ id: req.id, ok: true, result }),
        (err: unknown) => send({ id: req.id, ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
      );
  });
  process.on('disconnect', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  process.on('SIGINT', () => void shutdown(0));
}

export function ready(info: Record<string, unknown>): void {
  ipcSend()({ ready: true, ...info });
}

/** Peak and current resident set size of this process, from /proc (Linux), in bytes. */
export function residentSet(): { peakRss: number | undefined; rss: number } {
  let peakRss: number | undefined;
  try {
    const m = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) peakRss = Number(m[1]) * 1024;
  } catch {
    // not Linux
  }
  return { peakRss, rss: process.memoryUsage().rss };
}

/**
 * Resident memory by kind of mapping (MB), from /proc/self/smaps: the node binary, glibc's malloc heap, anonymous
 * mappings (V8's heap pages, malloc arenas of other threads, wasm memory, thread stacks), other files. For looking
 * into what of the RSS is not V8's heap (BENCH_SMAPS=1). Empty where /proc is not available.
 */
export function residentByMapping(): Record<string, number> {
  const out: Record<string, number> = {};
  let text: string;
  try {
    text = readFileSync('/proc/self/smaps', 'utf8');
  } catch {
    return out;
  }
  let kind = '';
  for (const line of text.split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      const [, path = ''] = head;
      kind =
        path === ''
          ? 'anonymous'
          : path.startsWith('[')
            ? path
            : path === process.execPath
              ? 'node binary'
              : path.includes('.so')
                ? 'shared libraries'
                : 'other files';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) out[kind] = (out[kind] ?? 0) + Number(rss[1]) / 1024;
  }
  return out;
}

/**
 * Time running `speed` times faster than the wall clock from `epoch` on (the compressed hour). Every process of a
 * run uses the same epoch and speed, so the bot and the sandbox agree on what time it is.
 */
export class ScaledClock implements Clock {
  constructor(
    private readonly epoch: number,
    private readonly speed: number,
  ) {}
  now(): number {
    return Math.floor(this.epoch + (Date.now() - this.epoch) * this.speed);
  }
}

export function clockFromEnv(env: NodeJS.ProcessEnv): Clock | undefined {
  const speed = Number(env.BENCH_CLOCK_SPEED ?? '1');
  const epoch = Number(env.BENCH_CLOCK_EPOCH ?? '0');
  if (!Number.isFinite(speed) || speed <= 0) throw new Error('BENCH_CLOCK_SPEED must be a positive number');
  return speed === 1 || !epoch ? undefined : new ScaledClock(epoch, speed);
}
