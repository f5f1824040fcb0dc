// Starts a real redis-server for a test on a free port in a temp dir (no persistence), with stop/restart/flush.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './net.js';

const live = new Set<ChildProcess>();
// A test file that dies before its afterAll must not leave a redis-server behind.
process.once('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

export class TestRedis {
  private proc: ChildProcess | undefined;
  private admin: Redis | undefined;

  private constructor(
    readonly port: number,
    readonly dir: string,
    /** AOF with fsync on every write: a SIGKILL loses nothing acknowledged (what production runs for state). */
    readonly persistent: boolean,
  ) {}

  /** redis://127.0.0.1:PORT */
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Without persistence by default; `persistent` keeps data across stop()/restart() (AOF, appendfsync always). */
  static async start(opts: { persistent?: boolean } = {}): Promise<TestRedis> {
    const dir = mkdtempSync(join(tmpdir(), 'billbridge-redis-'));
    for (let attempt = 0; ; attempt++) {
      const r = new TestRedis(await freePort(), dir, opts.persistent ?? false);
      try {
        await r.launch();
        return r;
      } catch (err) {
        // Another process took the port between freePort() and the bind: try another one.
        if (attempt >= 4) {
          rmSync(dir, { recursive: true, force: true });
          throw err;
        }
      }
    }
  }

  /** Is redis-server running right now. */
  get running(): boolean {
    return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Kills redis-server at once (SIGKILL: what a crash looks like to clients). */
  async stop(): Promise<void> {
    this.admin?.disconnect();
    this.admin = undefined;
    const p = this.proc;
    if (!p || !this.running) return;
    const exited = new Promise<void>((resolve) => p.once('exit', () => resolve()));
    p.kill('SIGKILL');
    await exited;
    live.delete(p);
  }

  /** Starts it again on the same port: empty after a restart without persistence, as it was with it. */
  async restart(): Promise<void> {
    await this.stop();
    await this.launch();
  }

  /** FLUSHALL: every key gone, the server still up. */
  async flush(): Promise<void> {
    await this.client().flushall();
  }

  /** A plain client for the test's own looks (keys, TTLs, DEBUG SLEEP). */
  client(): Redis {
    if (!this.admin) {
      this.admin = new Redis(this.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
      this.admin.on('error', () => undefined);
    }
    return this.admin;
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private launch(): Promise<void> {
    const persistence = this.persistent ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      ...persistence,
      '--dir',
      this.dir,
      '--daemonize',
      'no',
      '--loglevel',
      'warning',
    ];
    const p = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc = p;
    live.add(p);
    return new Promise<void>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => fail(new Error(`redis-server did not start within 10 s: ${out.slice(-500)}`)), 10_000);
      const fail = (err: Error) => {
        clearTimeout(timer);
        p.kill('SIGKILL');
        live.delete(p);
        reject(err);
      };
      p.once('error', (err) => fail(new Error(`redis-server could not be started (is it installed? .ci/run installs it): ${err.message}`)));
      p.once('exit', (code) => fail(new Error(`redis-server exited with ${code}: ${out.slice(-500)}`)));
      // Ready when it answers PING (its log level is kept quiet, so no "Ready to accept" line to wait for).
      const probe = async () => {
        const c = new Redis(this.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
        c.on('error', () => undefined);
        try {
          await c.connect();
          await c.ping();
          clearTimeout(timer);
          p.removeAllListeners('exit');
          p.removeAllListeners('error');
          resolve();
        } catch {
          if (p.exitCode === null) setTimeout(() => void probe(), 25);
        } finally {
          c.disconnect();
        }
      };
      p.stdout.on('data', (d: Buffer) => (out += d.toString()));
      p.stderr.on('data', (d: Buffer) => (out += d.toString()));
      void probe();
    });
  }
}
