/**
 * Tests start their Redis servers side by side on ports that are checked free, not held: a port can be taken
 * between the check and redis-server's bind. Such a start is retried on another port, at once, not after
 * the 10 s a silent server is waited for.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer, type Server } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { freePort } from './free-port.js';
import { RedisServerExitedError, spawnOnFreePort, spawnRedisServer } from './redis-server.js';
import { waitFor } from './wait-for.js';

const holders: Server[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  await Promise.all(holders.splice(0).map((h) => new Promise((r) => h.close(r))));
});

/** Something else listening on a free port, as another test's server would. */
async function takenPort(): Promise<number> {
  const port = await freePort();
  const holder = createServer((socket) => socket.destroy());
  holders.push(holder);
  await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve));
  return port;
}

const argsFor = (port: number) => ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];

it('a server whose port is taken fails at once, saying so', async () => {
  const port = await takenPort();
  const started = Date.now();
  const err = await spawnRedisServer(argsFor(port), port).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(RedisServerExitedError);
  expect((err as RedisServerExitedError).addressInUse).toBe(true);
  expect((err as Error).message).toContain(`port ${port}`);
  expect(Date.now() - started).toBeLessThan(10_000); // not the ready wait's timeout
});

it('a port taken between the pick and the bind is given up for another, where the server answers', async () => {
  const taken = await takenPort();
  const picks = [taken];
  const { port, child } = await spawnOnFreePort(async () => picks.shift() ?? freePort(), argsFor);
  children.push(child);
  expect(port).not.toBe(taken);
  expect(child.exitCode).toBeNull();
});

it('a process that exits without stopping its servers takes them with it', async () => {
  // The built module, in a process of its own that starts a server, says its port, then exits as a failed
  // bench does (process.exit, no stop()).
  const built = new URL('../dist/redis-server.js', import.meta.url).href;
  const script = `const { startRedisServer } = await import(${JSON.stringify(built)}); const r = await startRedisServer(); process.stdout.write(String(r.port) + '\\n'); process.exit(1);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(code).toBe(1);
  const port = Number(out.trim());
  expect(port).toBeGreaterThan(0);
  // Gone: nothing accepts a connection on its port any more (SIGKILL lands at once; polled, not slept).
  await waitFor(async () => !(await accepts(port)), { timeoutMs: 5_000, what: `redis-server on ${port} gone` });
});

/** Whether something accepts a TCP connection on 127.0.0.1:port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}
