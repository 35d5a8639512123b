/**
 * What both sides of `pnpm bench:schedules` share: private redis-servers and child processes that are
 * always stopped (at the end, on error, on Ctrl-C), Redis and process counters, a bounded-concurrency
 * runner for the upserts, and the firing window that turns counters into per-occurrence figures.
 */
import { readFileSync } from 'node:fs';
import { appEntry, freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import type { LagReply } from './lag-recorder.js';

export const progress = (s: string) => process.stderr.write(`[bench:schedules ${new Date().toISOString().slice(11, 19)}] ${s}\n`);
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---- cleanup: every redis-server and process the bench starts is stopped, whatever happens ----

/** Stops of the processes started (first) and of the redis-servers (after them), by kind. */
const cleanups = { process: new Set<() => Promise<unknown>>(), redis: new Set<() => Promise<unknown>>() };

/** Registers `stop`; returns a function that runs it now (once) and unregisters it. */
function track(kind: keyof typeof cleanups, stop: () => Promise<unknown>): () => Promise<void> {
  let done: Promise<unknown> | undefined;
  const run = async () => {
    cleanups[kind].delete(run);
    done ??= stop().catch((err: unknown) => progress(`cleanup: ${(err as Error).message}`));
    await done;
  };
  cleanups[kind].add(run);
  return run;
}

/** Stops every process, then every redis-server: a draining app whose Redis went first would exit 1. */
export async function cleanupAll(): Promise<void> {
  await Promise.all([...cleanups.process].map((c) => c()));
  await Promise.all([...cleanups.redis].map((c) => c()));
}

/** Ctrl-C or a kill stops every child first, then exits. */
export function installSignalCleanup(): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      progress(`${signal}: stopping every process and redis-server the bench started`);
      void cleanupAll().finally(() => process.exit(130));
    });
  }
}

export interface PrivateRedis {
  url: string;
  client: Redis;
  stop(): Promise<void>;
}

export async function privateRedis(): Promise<PrivateRedis> {
  const server: RedisServerHandle = await startRedisServer();
  const stop = track('redis', () => server.stop());
  return { url: server.url, client: server.client(), stop };
}

export interface Child {
  app: AppProcess;
  pid: number;
  /** Loopback port it serves (health, or the lag recorder for the bare BullMQ worker). */
  port: number;
  lagPort: number | undefined;
  startedAt: number;
  stop(): Promise<void>;
}

/** Starts a stock app (`worker`, `scheduler`) or a bench entry (a path) as a real child process. */
export async function startChild(entry: 'worker' | 'scheduler' | string, env: Record<string, string>, opts: { lagPort?: boolean } = {}): Promise<Child> {
  const port = await freePort();
  const lagPort = opts.lagPort ? await freePort() : undefined;
  const startedAt = performance.now();
  const app = startApp(entry === 'worker' || entry === 'scheduler' ? appEntry(entry) : entry, {
    PORT: String(port),
    LOG_LEVEL: 'warn',
    ...(lagPort !== undefined && { BENCH_LAG_PORT: String(lagPort) }),
    ...env,
  });
  const stop = track('process', async () => {
    // SIGTERM drains; a process that has not exited 15 s later is killed so the bench always ends.
    const timer = setTimeout(() => app.proc.kill('SIGKILL'), 15_000);
    await app.stop('SIGTERM');
    clearTimeout(timer);
  });
  void app.exited.then((code) => {
    if (code !== 0 && code !== null) progress(`${entry} (pid ${app.proc.pid}) exited ${code}:\n${app.lines.slice(-15).join('\n')}`);
  });
  return { app, pid: app.proc.pid ?? 0, port, lagPort, startedAt, stop };
}

/** Milliseconds from the child's spawn until GET <path> answers 200; fails at once if the child exits. */
export async function msUntilOk(child: Child, path: string, timeoutMs = 600_000): Promise<number> {
  const ok = waitFor(async () => (await fetch(`http://127.0.0.1:${child.port}${path}`).catch(() => undefined))?.ok === true, {
    timeoutMs,
    intervalMs: 10,
    what: `${path} of pid ${child.pid}`,
  });
  const exited = child.app.exited.then((code) => {
    throw new Error(`pid ${child.pid} exited (${code}) before ${path} answered:\n${child.app.lines.slice(-15).join('\n')}`);
  });
  // Whichever loses must not surface as an unhandled rejection (the child exits at the end of the bench).
  ok.catch(() => undefined);
  exited.catch(() => undefined);
  await Promise.race([ok, exited]);
  return performance.now() - child.startedAt;
}

// ---- counters ----

export interface RedisCounters {
  commands: number;
  cpuS: number;
}

export async function redisCounters(redis: Redis): Promise<RedisCounters> {
  const info = await redis.info();
  const get = (k: string) => Number(new RegExp(`^${k}:([0-9.]+)`, 'm').exec(info)?.[1] ?? NaN);
  return { commands: get('total_commands_processed'), cpuS: get('used_cpu_user') + get('used_cpu_sys') };
}

export async function usedMemory(redis: Redis): Promise<number> {
  return Number(/^used_memory:(\d+)/m.exec(await redis.info('memory'))?.[1] ?? NaN);
}

/**
 * `used_memory` once Redis has settled (lazy frees, client buffers): the median of five samples taken
 * after a pause, so one sample caught mid-reply does not count.
 */
export async function settledMemory(redis: Redis): Promise<number> {
  await sleep(1500);
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    samples.push(await usedMemory(redis));
    await sleep(200);
  }
  return percentile(samples.sort((a, b) => a - b), 0.5);
}

const CLK_TCK = 100; // Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these

/** CPU seconds (user + system) the process has used so far. */
export function processCpuS(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] as number;
}

/**
 * Runs `fn(i)` for i in [0, n) with at most `concurrency` calls in flight; returns the seconds it took.
 * Progress goes to stderr every 5 s (a million upserts take a while).
 */
export async function runPool(n: number, concurrency: number, what: string, fn: (i: number) => Promise<unknown>): Promise<number> {
  const started = performance.now();
  let next = 0;
  let lastReport = started;
  const lane = async () => {
    while (next < n) {
      await fn(next++);
      if (performance.now() - lastReport > 5000) {
        lastReport = performance.now();
        progress(`  ${what}: ${next}/${n} (${(next / ((lastReport - started) / 1000)).toFixed(0)}/s)`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, lane));
  return (performance.now() - started) / 1000;
}

// ---- the firing window ----

export interface FireResult {
  seconds: number;
  /** Occurrences due in the window (from the spread) and how many of those ran. */
  due: number;
  ran: number;
  lag: { p50: number; p99: number; max: number };
  commandsPerOcc: number;
  redisCpuUsPerOcc: number;
  /** Null where there is no scheduler process (BullMQ). */
  schedulerCpuUsPerOcc: number | null;
  workerCpuUsPerOcc: number;
  /** used_memory at the end of the window less the baseline, per schedule (all Redis holds while firing). */
  firingBytesPerSchedule: number;
}

/**
 * Counts over [t0, t1) of FIRE seconds: Redis commands and CPU, the CPU of each scheduler and worker
 * process; then, after `graceMs` for the last occurrences to start, reads the lags of the occurrences due
 * in the window from each worker. Costs are divided by the occurrences that ran in the window (in a
 * steady state the work done in a window is that of as many occurrences as fall due in it).
 */
export async function fireWindow(opts: {
  redis: Redis;
  schedulers: Child[];
  workers: Child[];
  seconds: number;
  graceMs: number;
  schedules: number;
  /** used_memory before the schedules were stored. */
  baselineMemory: number;
  dueIn: (fromMs: number, toMs: number) => number;
}): Promise<FireResult> {
  const cpu = (cs: Child[]) => cs.reduce((sum, c) => sum + processCpuS(c.pid), 0);
  const r0 = await redisCounters(opts.redis);
  const s0 = cpu(opts.schedulers);
  const w0 = cpu(opts.workers);
  const t0 = Date.now();
  await sleep(opts.seconds * 1000);
  const t1 = Date.now();
  const r1 = await redisCounters(opts.redis);
  const s1 = cpu(opts.schedulers);
  const w1 = cpu(opts.workers);
  const memory = await usedMemory(opts.redis);
  await sleep(opts.graceMs);
  const lags: number[] = [];
  for (const w of opts.workers) {
    const reply = (await (await fetch(`http://127.0.0.1:${w.lagPort}/lags?from=${t0}&to=${t1}`)).json()) as LagReply;
    for (const l of reply.lags) lags.push(l);
  }
  lags.sort((a, b) => a - b);
  const ran = lags.length;
  const per = (x: number) => (ran > 0 ? x / ran : NaN);
  return {
    seconds: (t1 - t0) / 1000,
    due: opts.dueIn(t0, t1),
    ran,
    lag: { p50: percentile(lags, 0.5), p99: percentile(lags, 0.99), max: lags.at(-1) ?? NaN },
    commandsPerOcc: per(r1.commands - r0.commands),
    redisCpuUsPerOcc: per((r1.cpuS - r0.cpuS) * 1e6),
    schedulerCpuUsPerOcc: opts.schedulers.length > 0 ? per((s1 - s0) * 1e6) : null,
    workerCpuUsPerOcc: per((w1 - w0) * 1e6),
    firingBytesPerSchedule: (memory - opts.baselineMemory) / opts.schedules,
  };
}
