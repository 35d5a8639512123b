import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, startOnFreePort } from './free-port.js';
import { waitFor } from './wait-for.js';

export interface RedisServerHandle {
  port: number;
  url: string;
  /** kill -9 the server (data since the last fsync is lost, as in a real crash). */
  kill(): Promise<void>;
  /** Start it again on the same port and data dir. */
  restart(): Promise<void>;
  /** SIGSTOP the server: its connections stay open and nothing is answered (a frozen host) until resume(). */
  pause(): void;
  /** SIGCONT a paused server. */
  resume(): void;
  stop(): Promise<void>;
  client(): Redis;
}

/** redis-server exited before it answered PING: `addressInUse` when its port (or cluster-bus port) was taken meanwhile. */
export class RedisServerExitedError extends Error {
  constructor(readonly port: number, readonly addressInUse: boolean, output: string) {
    super(`redis-server on port ${port} exited before it answered${addressInUse ? ' (address already in use)' : ''}: ${output.trim().slice(-500) || 'no output'}`);
    this.name = 'RedisServerExitedError';
  }
}

/**
 * Servers this process started and that still run. A process that exits without stopping them (a bench or a
 * script that failed half-way, then called process.exit) kills them as it goes, so none is left running on
 * the machine with nobody to stop it. A process killed -9 cannot; nothing here runs then.
 */
const running = new Set<ChildProcess>();
let killOnExit = false;
function track(child: ChildProcess): void {
  running.add(child);
  child.once('exit', () => running.delete(child));
  if (killOnExit) return;
  killOnExit = true;
  process.once('exit', () => {
    for (const c of running) c.kill('SIGKILL');
  });
}

/** How much of a server's output is kept for the error when it dies at start. */
const OUTPUT_TAIL = 4096;

/**
 * Spawns `redis-server` with `args` and resolves once it answers PING on `port` (10 s at most). A missing
 * binary is a clear error; a server that exits first (its port taken by another test's server between
 * freePort and its bind) rejects at once with RedisServerExitedError, so the caller can pick another port.
 * Its output is drained for as long as it runs (an unread pipe would block it once full). Shared by the
 * single server below and the cluster's nodes (redis-cluster.ts).
 */
export async function spawnRedisServer(args: string[], port: number, auth: { password?: string } = {}): Promise<ChildProcess> {
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  track(child);
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-OUTPUT_TAIL);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const died = new Promise<never>((_, reject) => {
    child.once('error', (err) => reject(new Error(`could not start redis-server (is it on PATH? apt-get install redis-server): ${err.message}`)));
    child.once('exit', () => reject(new RedisServerExitedError(port, /address already in use/i.test(output), output)));
  });
  died.catch(() => undefined);
  const probe = new Redis({ ...auth, port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => undefined); // refused until the server listens: that is what we poll for
  const polling = new AbortController();
  const answered = waitFor(async () => {
    if (probe.status !== 'ready') await probe.connect().catch(() => undefined);
    return (await probe.ping()) === 'PONG';
  }, { timeoutMs: 10_000, what: `redis-server on port ${port}`, signal: polling.signal });
  answered.catch(() => undefined);
  try {
    await Promise.race([died, answered]);
  } catch (err) {
    child.kill('SIGKILL'); // a server that never answered is not left running
    throw err;
  } finally {
    polling.abort(); // a server that died is not polled on for the rest of the 10 s
    probe.disconnect();
  }
  return child;
}

/** A redis-server on a free port from `pick`, on another when that one was taken meanwhile (startOnFreePort). */
export async function spawnOnFreePort(
  pick: () => Promise<number>,
  argsFor: (port: number) => string[],
  auth: { password?: string } = {},
): Promise<{ port: number; child: ChildProcess }> {
  const { port, started } = await startOnFreePort(
    (p) => spawnRedisServer(argsFor(p), p, auth),
    (err) => err instanceof RedisServerExitedError && err.addressInUse,
    pick,
  );
  return { port, child: started };
}

/**
 * A private redis-server per test file, on a free port, so tests that kill or restart Redis never
 * touch the machine's shared instance or each other. `hz 100` as every Redis tickwork runs.
 */
export async function startRedisServer(
  /** `args`: more redis-server arguments, after the defaults (e.g. cluster mode for a one-node cluster). */
  opts: { appendonly?: boolean; password?: string; appendfsync?: 'always' | 'everysec'; args?: readonly string[] } = {},
): Promise<RedisServerHandle> {
  const dir = mkdtempSync(join(tmpdir(), 'tickwork-redis-'));
  const argsFor = (port: number) => [
    '--port', String(port),
    '--bind', '127.0.0.1',
    '--dir', dir,
    '--save', '',
    '--appendonly', opts.appendonly ? 'yes' : 'no',
    '--appendfsync', opts.appendfsync ?? 'always',
    '--hz', '100',
    '--maxmemory-policy', 'noeviction',
    ...(opts.password ? ['--requirepass', opts.password] : []),
    ...(opts.args ?? []),
  ];
  const auth = opts.password ? { password: opts.password } : {};
  const clients: Redis[] = [];
  const started = await spawnOnFreePort(freePort, argsFor, auth);
  const port = started.port;
  let proc: ChildProcess | undefined = started.child;

  const launch = async () => {
    proc = await spawnRedisServer(argsFor(port), port, auth);
  };

  const exit = (signal: NodeJS.Signals) =>
    new Promise<void>((resolve) => {
      const child = proc;
      if (!child || child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill(signal);
    });

  return {
    port,
    url: opts.password ? `redis://:${encodeURIComponent(opts.password)}@127.0.0.1:${port}` : `redis://127.0.0.1:${port}`,
    kill: () => exit('SIGKILL'),
    restart: launch,
    pause: () => void proc?.kill('SIGSTOP'),
    resume: () => void proc?.kill('SIGCONT'),
    async stop() {
      for (const c of clients) c.disconnect();
      // A paused server would not act on SIGTERM until resumed.
      proc?.kill('SIGCONT');
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
