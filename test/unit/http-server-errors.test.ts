// What the bot's listeners do with an error the operating system reports on them: a port already taken at start-up is
// a start-up failure the entry point can say in words; an accept failure later (out of file descriptors under a flood
// of connections) is logged, and the process stays up.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { systemClock } from '../../src/infra/clock.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { createHttpServer } from '../../src/http/server.js';
import { createMetricsServer } from '../../src/http/metrics.js';
import { LogCapture } from '../harness/logs.js';

const acceptFailure = () => Object.assign(new Error('accept EMFILE'), { code: 'EMFILE', syscall: 'accept' });

function listeners(logs: LogCapture) {
  const log = createLogger({ level: 'debug', secrets: new SecretRegistry(), destination: logs });
  const bot = createHttpServer({
    log,
    clock: systemClock,
    messages: { process: async () => undefined, authenticated: () => false },
    readiness: () => ({}),
    metrics: async () => ({ contentType: 'text/plain', body: '' }),
    metricsToken: '',
    requireBearer: false,
    routes: [],
  });
  const metrics = createMetricsServer(async () => ({ contentType: 'text/plain', body: '' }), '', log);
  return { bot, metrics };
}

describe('an error on a listening server', () => {
  it("an accept failure (EMFILE) on the bot's port is logged, not an unhandled 'error' event that ends the process", () => {
    const logs = new LogCapture('http errors');
    const { bot } = listeners(logs);
    expect(() => bot.server.emit('error', acceptFailure())).not.toThrow();
    expect(() => bot.server.emit('error', acceptFailure())).not.toThrow();
    expect(logs.text()).toContain('EMFILE');
  });

  it('accept failures on the METRICS_PORT listener are logged, not an unhandled error event', () => {
    const logs = new LogCapture('http errors');
    const { metrics } = listeners(logs);
    expect(() => metrics.emit('error', acceptFailure())).not.toThrow();
    expect(() => metrics.emit('error', acceptFailure())).not.toThrow();
    expect(logs.text()).toContain('EMFILE');
  });
});

describe('a port already in use at start-up', () => {
  it("listen() rejects with EADDRINUSE (the entry point says it in words) instead of an unhandled 'error' event", async () => {
    const dirs = [0, 1].map(() => mkdtempSync(join(tmpdir(), 'billbridge-listen-')));
    const env = (dir: string, port: string) => ({ PORT: port, HOST: '127.0.0.1', STATE_DIR: dir, LOG_LEVEL: 'silent', NODE_ENV: 'test' });
    const first = await buildApp(loadConfig(env(dirs[0]!, '0')), { logDestination: new LogCapture('first') });
    try {
      const url = new URL(await first.listen());
      const second = await buildApp(loadConfig(env(dirs[1]!, url.port)), { logDestination: new LogCapture('second') });
      try {
        await expect(second.listen()).rejects.toMatchObject({ code: 'EADDRINUSE' });
      } finally {
        await second.close();
      }
    } finally {
      await first.close();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    }
  }, 20_000);
});
