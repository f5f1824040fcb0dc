// Captures the bot's log lines in memory so tests can read (and secret-scan) them.
import type { DestinationStream } from 'pino';
import { registerLogCapture } from './secretScan.js';

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
  records(): Array<Record<string, any>> {
    return this.lines.flatMap((l) => {
      try {
        return [JSON.parse(l)];
      } catch {
        return [];
      }
    });
  }
  text(): string {
    return this.lines.join('');
  }
}
