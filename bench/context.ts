// What every scenario gets: the run's size (full or --quick), the shared connector stand-in, a scratch directory,
// and helpers to start and always stop the processes a scenario needs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchConnector } from './connector.js';
import {
  startBotProcess,
  startSandboxProcess,
  type BotOptions,
  type Child,
  type SandboxInfo,
  type SandboxOptions,
  type BotInfo,
} from './processes.js';

export interface BenchOptions {
  quick: boolean;
  /** The bot's LOG_LEVEL (info, as in production, by default). */
  logLevel: string;
  /** BILL sandbox latency added to every call. */
  latencyMs: number;
  invoices: number;
  bills: number;
  seed: number;
}

export class BenchContext {
  private readonly children: Child[] = [];
  private readonly dirs: string[] = [];

  constructor(
    readonly opts: BenchOptions,
    readonly connector: BenchConnector,
    private readonly say: (line: string) => void,
  ) {}

  log(line: string): void {
    this.say(line);
  }

  stateDir(name: string): string {
    const dir = mkdtempSync(join(tmpdir(), `billbridge-bench-${name}-`));
    this.dirs.push(dir);
    return dir;
  }

  async sandbox(name: string, o: Partial<SandboxOptions> = {}): Promise<Child<SandboxInfo>> {
    const child = await startSandboxProcess(name, {
      latencyMs: this.opts.latencyMs,
      invoices: this.opts.invoices,
      bills: this.opts.bills,
      ...o,
    });
    this.children.push(child);
    return child;
  }

  async bot(name: string, sandbox: SandboxInfo, o: Partial<BotOptions> = {}): Promise<Child<BotInfo>> {
    const child = await startBotProcess(name, {
      sandbox,
      stateDir: o.stateDir ?? this.stateDir(name.replace(/\W+/g, '-')),
      logLevel: this.opts.logLevel,
      ...o,
    });
    this.children.push(child);
    return child;
  }

  track<C extends Child>(child: C): C {
    this.children.push(child);
    return child;
  }

  /** Stops every process this context started (newest first), and removes its scratch directories. */
  async cleanup(): Promise<void> {
    for (const child of this.children.splice(0).reverse()) {
      await child.stop().catch(() => undefined);
      this.reportGc(child);
    }
    for (const dir of this.dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  }

  async stop(child: Child): Promise<void> {
    const i = this.children.indexOf(child);
    if (i >= 0) this.children.splice(i, 1);
    await child.stop();
    this.reportGc(child);
  }

  /** BENCH_GC_TRACE=1: what V8's collections did in a bot, once it has stopped. */
  private reportGc(child: Child): void {
    if (child.gc.collections > 0) this.say(`  gc, ${child.name}: ${child.gc.describe()}`);
  }
}
