// Entry point: read config, build the app, listen, drain on SIGTERM/SIGINT.
import { errorMessage } from './errors.js';
import { buildApp } from './app.js';
import { ConfigError, loadConfig, readEnv } from './config.js';
import { StateDirInUse } from './infra/state/sqliteStore.js';
import { visible } from './infra/visible.js';

async function main(): Promise<void> {
  const app = await buildApp(loadConfig(readEnv()));
  await app.listen();

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: draining in-flight turns');
    setTimeout(() => {
      app.log.error('shutdown took longer than 20 s; exiting');
      process.exit(1);
    }, 20_000).unref();
    app.close().then(
      () => process.exit(0),
      (err: unknown) => {
        app.log.error({ err: String(err) }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => stop(signal));
}

main().catch((err: unknown) => {
  // A bad environment, or a second instance on the same STATE_DIR: the message says what to do; nothing else to add.
  const known = err instanceof ConfigError || err instanceof StateDirInUse;
  process.stderr.write(`billbridge: ${known ? '' : 'failed to start: '}${visible(errorMessage(err))}\n`);
  process.exit(1);
});
