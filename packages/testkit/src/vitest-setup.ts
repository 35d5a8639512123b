/**
 * Runs before each test file (testkit's vitest-config.ts, `setupFiles`). Test files share their worker
 * process (`isolate: false`), so what a file leaves open outlives it: Redis clients it handed to BullMQ (which
 * does not close a connection it was given), or one it forgot, would go on reconnecting to a redis-server
 * the file has stopped. Each file's Redis and Cluster clients still open after its own hooks are closed
 * here, as the end of its own process closed them when each file had one; so are app processes it left running.
 */
import { Cluster, Redis } from 'ioredis';
import { afterAll } from 'vitest';
import { liveApps } from './app-process.js';

interface Tracker {
  open: Set<Redis | Cluster>;
}

const KEY = Symbol.for('tickwork.testkit.openRedisClients');
const global = globalThis as typeof globalThis & { [KEY]?: Tracker };

if (!global[KEY]) {
  const tracker: Tracker = { open: new Set() };
  global[KEY] = tracker;
  for (const Client of [Redis, Cluster] as const) {
    const connect = Client.prototype.connect;
    Client.prototype.connect = function (this: Redis | Cluster, ...args: unknown[]) {
      tracker.open.add(this);
      return (connect as (...a: unknown[]) => Promise<void>).apply(this, args);
    } as typeof connect;
  }
}
const tracker = global[KEY];

// Registered before the file's own hooks, so it runs after them (vitest runs after-hooks in reverse).
afterAll(() => {
  for (const client of tracker.open) if (client.status !== 'end') client.disconnect();
  tracker.open.clear();
  // App processes the file left running (a test that failed before stopping its own) would go on
  // retrying a redis-server the file has stopped, taking CPU from the files after it.
  for (const proc of liveApps()) proc.kill('SIGKILL');
});
