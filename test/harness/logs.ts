// Captures the bot's log lines in memory so tests can read (and secret-scan) them.
import { EventEmitter } from 'node:events';
import type { DestinationStream } from 'pino';
import { registerLogCapture } from './secretScan.js';

/** One parsed log line: pino's message and level, and whatever fields the line carries. */
export interface LogRecord {
  msg?: string;
  level?: string | number;
  [key: string]: unknown;
}

export class LogCapture implements DestinationStream {
  readonly lines: string[] = [];
  private readonly events = new EventEmitter();
  constructor(source = 'bot log') {
    // Every capture is secret-scanned after its test file (test/setup/secret-scan.ts).
    registerLogCapture(this, source);
  }
  write(line: string): void {
    this.lines.push(line);
    this.events.emit('line');
  }
  /** The first record the predicate accepts, as soon as it is written (rejects after timeoutMs). */
  waitFor(predicate: (r: LogRecord) => boolean, timeoutMs = 10_000): Promise<LogRecord> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.records().find(predicate);
        if (!found) return;
        cleanup();
        resolve(found);
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for a log line`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.events.off('line', check);
      };
      this.events.on('line', check);
      check();
    });
  }
  /** Parsed JSON records. */
  records(): LogRecord[] {
    return this.lines.flatMap((l) => {
      try {
        return [JSON.parse(l) as LogRecord];
      } catch {
        return [];
      }
    });
  }
  text(): string {
    return this.lines.join('');
  }
}
