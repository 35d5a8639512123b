import type { Logger } from './logger.js';

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits 0 (or 1 if stopping threw). A second signal while
 * stopping exits at once, so an impatient operator is never stuck; so does passing `hardDeadlineMs`
 * (closing connections can hang while Redis is unreachable, and a process that never exits blocks deploys).
 */
export function onShutdown(log: Logger, stop: (signal: string) => Promise<void>, hardDeadlineMs = 10_000): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ signal }, 'second signal while stopping; exiting now');
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'shutting down');
    setTimeout(() => {
      log.error({ hardDeadlineMs }, 'shutdown did not finish in time; exiting');
      process.exit(1);
    }, hardDeadlineMs).unref();
    stop(signal).then(
      () => {
        log.info('stopped cleanly');
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

/** Logs and exits non-zero on a startup failure, printing the message plainly for humans reading a terminal. */
export function exitOnStartupError(log: Logger, err: unknown): never {
  const message = err instanceof Error ? err.message : String(err);
  log.fatal({ err }, message);
  process.stderr.write(`\n${message}\n`);
  process.exit(1);
}
