import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './free-port.js';
import { waitFor } from './wait-for.js';

export interface RedisServerHandle {
  port: number;
  url: string;
  /** kill -9 the server (data since the last fsync is lost, as in a real crash). */
  kill(): Promise<void>;
  /** Start it again on the same port and data dir. */
  restart(): Promise<void>;
  stop(): Promise<void>;
  client(): Redis;
}

/**
 * Spawns `redis-server` with `args` and resolves once it answers PING on `port` (10 s at most); a missing
 * binary is a clear error. Shared by the single server below and the cluster's nodes (redis-cluster.ts).
 */
export async function spawnRedisServer(args: string[], port: number, auth: { password?: string } = {}): Promise<ChildProcess> {
  const child = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const spawnFailed = new Promise<never>((_, reject) =>
    child.once('error', (err) => reject(new Error(`could not start redis-server (is it on PATH? apt-get install redis-server): ${err.message}`))),
  );
  spawnFailed.catch(() => undefined);
  const probe = new Redis({ ...auth, port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => undefined); // refused until the server listens: that is what we poll for
  try {
    await Promise.race([spawnFailed, waitFor(async () => {
      if (probe.status !== 'ready') await probe.connect().catch(() => undefined);
      return (await probe.ping()) === 'PONG';
    }, { timeoutMs: 10_000, what: `redis-server on port ${port}` })]);
  } catch (err) {
    child.kill('SIGKILL'); // a server that never answered is not left running
    throw err;
  } finally {
    probe.disconnect();
  }
  return child;
}

/**
 * A private redis-server per test file, on a free port, so tests that kill or restart Redis never
 * touch the machine's shared instance or each other. `hz 100` as every Redis tickwork runs.
 */
export async function startRedisServer(
  opts: { appendonly?: boolean; password?: string; appendfsync?: 'always' | 'everysec' } = {},
): Promise<RedisServerHandle> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'tickwork-redis-'));
  const args = [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--dir', dir,
    '--save', '',
    '--appendonly', opts.appendonly ? 'yes' : 'no',
    '--appendfsync', opts.appendfsync ?? 'always',
    '--hz', '100',
    '--maxmemory-policy', 'noeviction',
    ...(opts.password ? ['--requirepass', opts.password] : []),
  ];
  const auth = opts.password ? { password: opts.password } : {};
  let proc: ChildProcess | undefined;
  const clients: Redis[] = [];

  const launch = async () => {
    proc = await spawnRedisServer(args, port, auth);
  };

  const exit = (signal: NodeJS.Signals) =>
    new Promise<void>((resolve) => {
      const child = proc;
      if (!child || child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill(signal);
    });

  await launch();
  return {
    port,
    url: opts.password ? `redis://:${encodeURIComponent(opts.password)}@127.0.0.1:${port}` : `redis://127.0.0.1:${port}`,
    kill: () => exit('SIGKILL'),
    restart: launch,
    async stop() {
      for (const c of clients) c.disconnect();
      await exit('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
    client() {
      const c = new Redis({ ...auth, port, host: '127.0.0.1', maxRetriesPerRequest: null });
      // Tests kill and restart this server on purpose; reconnect errors are expected, not failures.
      c.on('error', () => undefined);
      clients.push(c);
      return c;
    },
  };
}
