// Captures the bot's log lines in memory so tests can read (and secret-scan) them.
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
  constructor(source = 'bot log') {
    // Every capture is secret-scanned after its test file (test/setup/secret-scan.ts).
    registerLogCapture(this, source);
  }
  write(line: string): void {
    this.lines.push(line);
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
