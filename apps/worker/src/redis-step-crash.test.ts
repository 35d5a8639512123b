/**
 * Redis steps under crashes: each charge is a `ctx.redisStep` whose function pauses after recording the
 * charge, so a crash lands between the effect and its record again and again. The charge and the record
 * commit together, so no customer is charged twice and none is missed, whether workers or Redis die, and
 * whether the worker runs BullMQ on the engine's fast path or on BullMQ's public paths only.
 */
import { fileURLToPath } from 'node:url';
import { createExactlyOnce, parseLedgerRecord, type IdempotencyLedger } from '@tickwork/exactly-once';
import { createLogger, createRedis, ownerTagOf, QueueSet } from '@tickwork/core';
import { chaosKills, freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import type { Job } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { chargesKey } from './testing/tx-fixtures.js';

const WORKER = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const FIXTURES = fileURLToPath(new URL('../dist/testing/tx-fixtures.js', import.meta.url));

let server: RedisServerHandle | undefined;
const apps: AppProcess[] = [];

/** A worker process on the billing fixtures (kept in `apps`, to stop); `env` adds to or overrides the settings below. */
const startWorker = async (url: string, env: Record<string, string> = {}) => {
  const app = startApp(WORKER, {
    REDIS_URL: url,
    JOBS_MODULE: FIXTURES,
    PORT: String(await freePort()),
    // info: the 'workers started' line names the process's tag, which its runs' ledger records carry.
    LOG_LEVEL: 'info',
    WORKER_CONCURRENCY: '5',
    // Short lock and lease, so a killed worker's run is taken over within about a second.
    WORKER_LOCK_DURATION_MS: '1000',
    WORKER_STALLED_INTERVAL_MS: '500',
    WORKER_MAX_STALLED_COUNT: '1000',
    ...env,
  });
  apps.push(app);
  return app;
};

afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.stop('SIGKILL')));
  await server?.stop();
  server = undefined;
});

const between = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo));
/** Runs kept unfinished during the chaos, so there is always a run in progress to kill a worker in. */
const IN_FLIGHT = 6;

/** Adds billing runs (`add`) and waits until every one added has completed (`done`). */
async function bill(url: string, customers: number, pauseMs: number) {
  const connection = createRedis(url, 'command');
  // Refused while Redis is killed on purpose: the polls below retry; the log would only be noise.
  connection.on('error', () => undefined);
  const queues = new QueueSet(connection, 'tickwork', createLogger('test', 'silent'));
  const jobs: Job[] = [];
  return {
    add: async (runs: string[]) => {
      for (const run of runs) jobs.push(await queues.get('tx').add('tx.bill', { run, customers, pauseMs }, { attempts: 50, backoff: { type: 'fixed', delay: 200 } }));
    },
    done: () =>
      waitFor(async () => {
        const states = await Promise.all(jobs.map((j) => j.getState().catch(() => 'unknown')));
        if (states.includes('failed')) throw new Error(`a billing run failed: ${states.join(',')}`);
        return states.every((s) => s === 'completed');
      }, { timeoutMs: 240_000, intervalMs: 250, what: 'every billing run completed' }),
    /** Runs added and not yet finished, by state. */
    counts: async () => (await queues.get('tx').getJobCounts('active', 'waiting', 'delayed', 'prioritized')) as Record<string, number>,
    // The connection is ours, not the QueueSet's: left open it would keep retrying once afterEach stops Redis.
    close: async () => {
      await queues.close();
      connection.disconnect();
    },
  };
}

/** Every customer of every run was charged exactly once. */
async function expectChargedOnce(url: string, runs: string[], customers: number) {
  const redis = createRedis(url, 'command');
  try {
    for (const run of runs) {
      const charged = await redis.hgetall(chargesKey(run));
      const twice = Object.entries(charged).filter(([, n]) => n !== '1');
      expect({ run, customers: Object.keys(charged).length, twice }).toEqual({ run, customers, twice: [] });
    }
  } finally {
    redis.disconnect();
  }
}

describe('ctx.redisStep: the effect and its record commit together', () => {
  const kills = chaosKills();
  it(`${kills} kill -9s, each of a worker holding a run in progress, while runs charge 300 customers each: nobody charged twice, nobody missed`, async () => {
    // One worker start and a 0.3-1 s pause per kill (a kill waits for a started worker holding a run):
    // pnpm test runs 25, pnpm test:chaos 100 (testkit's chaos.ts).
    await killWhileBilling({ kills, engine: FAST_LINE });
  }, 120_000 + kills * 4_000);

  it("on BullMQ's public paths (WORKER_BULLMQ_FAST_PATH=off), 15 kill -9s of workers holding runs: nobody charged twice, nobody missed", async () => {
    // No reaper there: a killed worker's runs come back through BullMQ's own stalled check once their lock
    // (1 s here) expires. 15 kills keep the case well under a minute.
    await killWhileBilling({ kills: 15, env: { WORKER_BULLMQ_FAST_PATH: 'off' }, engine: PUBLIC_LINE });
  }, 300_000);

  it('Redis killed -9 three times mid-run (AOF, fsync every second): nobody charged twice, nobody missed', async () => {
    // everysec, as shipped: while an fsync is slow (a busy disk) Redis postpones its AOF writes and still
    // answers, so a kill can lose up to about 2 s of writes it acknowledged, effects and records together.
    // The workers see the restart (a new run_id) and hand their runs back, which redo the lost steps
    // (redis-restarts.ts; redis-restart.test.ts makes that loss happen every time).
    server = await startRedisServer({ appendonly: true, appendfsync: 'everysec' });
    const redisServer = server;
    const runs = Array.from({ length: 6 }, (_, i) => `redis-kill-${i}`);
    await Promise.all([0, 1].map(() => startWorker(redisServer.url)));
    const billing = await bill(redisServer.url, 300, 20);
    await billing.add(runs);
    const probe = redisServer.client();
    probe.on('error', () => undefined); // refused while Redis is down: that is the test
    for (let k = 0; k < 3; k++) {
      // Wait for charges to be under way, then crash Redis in the middle of them.
      const before = await chargedSoFar(probe, runs);
      await waitFor(async () => (await chargedSoFar(probe, runs)) > before + 50, { timeoutMs: 60_000, what: 'charges under way' });
      await redisServer.kill();
      await redisServer.restart();
    }
    await billing.done();
    await billing.close();
    await expectChargedOnce(redisServer.url, runs, 300);
  }, 300_000);
});

const FAST_LINE = "BullMQ engine: fast path (the installed BullMQ matches tickwork's contract)";
const PUBLIC_LINE = "BullMQ engine: BullMQ's public paths only (WORKER_BULLMQ_FAST_PATH=off)";

/**
 * The chaos: 3 workers (started with `env`) bill runs of 300 customers while, every 0.3-1 s, a random one of
 * those holding a run in progress (its ledger record names the process) is killed -9 and a new one started
 * in its place, `kills` times; then every customer of every run must have been charged exactly once. Every
 * worker must have said it runs BullMQ the `engine` way, so a case cannot silently test the other path.
 */
async function killWhileBilling(opts: { kills: number; env?: Record<string, string>; engine: string }): Promise<void> {
  server = await startRedisServer();
  const url = server.url;
  const workers = await Promise.all([0, 1, 2].map(() => startWorker(url, opts.env)));
  for (const w of workers) expect((await w.waitForLog((l) => isEngineLine(l.msg), 'the BullMQ engine line', 45_000)).msg).toBe(opts.engine);
  // 15 runs to start with, then more after every kill (see below).
  const runs = Array.from({ length: 15 }, (_, i) => `kill-${i}`);
  const billing = await bill(url, 300, 40);
  await billing.add(runs);
  const probe = createRedis(url, 'command');
  const ledger = createExactlyOnce(probe, { prefix: 'tickwork' }).ledger;
  for (let kills = 0; kills < opts.kills; kills++) {
    // The chaos cadence, not a wait for a condition.
    await new Promise((r) => setTimeout(r, between(300, 1000)));
    const holding = await waitFor(async () => {
      const held = await holders(ledger, runs);
      const busy = workers.flatMap((w, i) => {
        const tag = processTag(w);
        return tag !== undefined && held.has(tag) ? [i] : [];
      });
      return busy.length > 0 ? busy : undefined;
    }, { timeoutMs: 60_000, intervalMs: 50, what: 'a worker holding a run in progress' });
    const i = holding[between(0, holding.length)] as number;
    await workers[i]?.stop('SIGKILL');
    workers[i] = await startWorker(url, opts.env);
    // Keep runs in flight, however fast this machine drains them (or slowly it starts workers), so every
    // kill lands on work: one more per kill, and as many as it takes to keep IN_FLIGHT unfinished.
    const unfinished = Object.values(await billing.counts()).reduce((a, b) => a + b, 0);
    const more = Array.from({ length: Math.max(1, IN_FLIGHT - unfinished) }, (_, k) => `kill-${runs.length + k}`);
    runs.push(...more);
    await billing.add(more);
  }
  probe.disconnect();
  await billing.done();
  await billing.close();
  await expectChargedOnce(url, runs, 300);
  // Every process that got as far as choosing its engine chose the one this case is about.
  const chosen = apps.flatMap((a) => a.logs()).flatMap((l) => (isEngineLine(l.msg) ? [l.msg] : []));
  expect(chosen.length).toBeGreaterThanOrEqual(3);
  expect(new Set(chosen)).toEqual(new Set([opts.engine]));
}

const isEngineLine = (msg: unknown): msg is string => typeof msg === 'string' && msg.startsWith('BullMQ engine:');

/** The process tag a worker logs when its workers start (worker-pool.ts): its runs' ledger records name it. */
function processTag(app: AppProcess | undefined): string | undefined {
  const started = app?.logs().find((l) => l.msg === 'workers started');
  return typeof started?.processTag === 'string' ? started.processTag : undefined;
}

/** Tags of the processes holding a run in progress now: a record `r|<tag>.<delivery>|...` under the run's key. */
async function holders(ledger: IdempotencyLedger, runs: string[]): Promise<Set<string>> {
  const records = await ledger.redis.mget(...runs.map((run) => ledger.keyOf(`tx.bill@${run}`)));
  const tags = new Set<string>();
  for (const raw of records) {
    const record = raw ? parseLedgerRecord(raw) : undefined;
    const tag = record?.state === 'r' ? ownerTagOf(record.owner) : undefined;
    if (tag) tags.add(tag);
  }
  return tags;
}

async function chargedSoFar(redis: ReturnType<RedisServerHandle['client']>, runs: string[]): Promise<number> {
  const lengths = await Promise.all(runs.map((run) => redis.hlen(chargesKey(run)).catch(() => 0)));
  return lengths.reduce((a, b) => a + b, 0);
}
