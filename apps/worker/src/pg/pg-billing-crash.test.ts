/**
 * The kill -9 billing test with the charge inside a PostgreSQL step (effect and record in one
 * transaction) and a pause after the effect, before the commit: real worker processes killed -9 at random
 * while runs are in flight, then every customer of every run must be charged exactly once: on the engine's
 * fast path, and on BullMQ's public paths only.
 */
import { fileURLToPath } from 'node:url';
import { createRedis, jobOptions } from '@tickwork/core';
import { appEntry, chaosKills, freePort, startApp, waitFor, type AppProcess } from '@tickwork/testkit';
import { Queue } from 'bullmq';
import { afterEach, expect, it } from 'vitest';
import { pgBill } from '../testing/pg-fixtures.js';
import { startPgServers, type PgServers } from '../testing/pg-servers.js';

const FIXTURES = fileURLToPath(new URL('../../dist/testing/pg-fixtures.js', import.meta.url));
const CUSTOMERS = 40;
const IN_FLIGHT = 10;
const FAST_LINE = "BullMQ engine: fast path (the installed BullMQ matches tickwork's contract)";
const PUBLIC_LINE = "BullMQ engine: BullMQ's public paths only (WORKER_BULLMQ_FAST_PATH=off)";

// Each case on servers of its own: the run ids, the step records and PostgreSQL's rollback count start fresh.
let servers: PgServers | undefined;
let queue: Queue | undefined;
let connection: ReturnType<typeof createRedis> | undefined;
const everyWorker: AppProcess[] = [];

afterEach(async () => {
  await Promise.all(everyWorker.splice(0).map((w) => w.stop('SIGKILL')));
  await queue?.close();
  connection?.disconnect();
  await servers?.stop();
  servers = queue = connection = undefined;
});

const kills = chaosKills(); // pnpm test runs 25, pnpm test:chaos 100 (testkit's chaos.ts)
it(`${kills} kill -9s of 3 workers mid-billing (charge in a pgStep, pause after the effect): 0 customers charged twice, none lost`, async () => {
  await killWhileBilling({ kills, engine: FAST_LINE });
}, 120_000 + kills * 3_000);

it("on BullMQ's public paths (WORKER_BULLMQ_FAST_PATH=off), 8 kill -9s of 3 workers mid-billing: 0 customers charged twice, none lost", async () => {
  // No reaper there: a killed worker's runs come back through BullMQ's own stalled check once their lock
  // (2 s here) expires. 8 kills keep the case short; redis-step-crash.test.ts runs the public paths' longer chaos.
  await killWhileBilling({ kills: 8, env: { WORKER_BULLMQ_FAST_PATH: 'off' }, engine: PUBLIC_LINE });
}, 240_000);

/**
 * The chaos: 3 workers (started with `env`) bill runs, a random ready one killed -9 every 0.3-1 s and a new
 * one started in its place, `kills` times, runs kept in flight; then every customer of every run must be
 * charged exactly once. Every worker must have said it runs BullMQ the `engine` way, so a case cannot
 * silently test the other path.
 */
async function killWhileBilling(opts: { kills: number; env?: Record<string, string>; engine: string }): Promise<void> {
  const KILLS = opts.kills;
  servers = await startPgServers();
  const { pg: pgServer, redis: redisServer, pool } = servers;
  connection = createRedis(redisServer.url, 'command');
  const q = (queue = new Queue('pgbill', { connection, prefix: 'tickwork' }));
  const startWorker = async (): Promise<AppProcess & { ready?: boolean }> => {
    const app: AppProcess & { ready?: boolean } = startApp(appEntry('worker'), {
      REDIS_URL: redisServer.url,
      JOBS_MODULE: FIXTURES,
      FX_DATABASE_URL: pgServer.url,
      WORKER_QUEUES: 'pgbill',
      PORT: String(await freePort()),
      WORKER_CONCURRENCY: '4',
      // Crashed runs are taken over within ~3 s. A delivery killed before its first new step makes no
      // progress, and a run can be that unlucky several times in a row under 100 kills: a stall budget the
      // crash loop cannot exhaust keeps this test about double charges, not about the stall limit.
      WORKER_LOCK_DURATION_MS: '2000',
      WORKER_STALLED_INTERVAL_MS: '1000',
      WORKER_MAX_STALLED_COUNT: '1000',
      ...opts.env,
    });
    everyWorker.push(app);
    void app.waitForLog((l) => l.msg === 'worker ready', 'worker ready').then(
      () => (app.ready = true),
      () => undefined,
    );
    return app;
  };

  const workers: (AppProcess & { ready?: boolean })[] = [];
  for (let i = 0; i < 3; i++) workers.push(await startWorker());
  for (const w of workers) expect((await w.waitForLog((l) => isEngineLine(l.msg), 'the BullMQ engine line', 45_000)).msg).toBe(opts.engine);
  const runs: string[] = [];
  const enqueue = async () => {
    const run = `run-${runs.length}`;
    runs.push(run);
    await q.add(pgBill.name, { run, customers: CUSTOMERS, maxPauseMs: 40 }, { ...jobOptions(pgBill), jobId: run });
  };
  for (let i = 0; i < IN_FLIGHT; i++) await enqueue();

  for (let kills = 0; kills < KILLS; ) {
    // The chaos cadence, not a wait for a condition: a random ready worker dies every 0.3-1 s.
    await new Promise((r) => setTimeout(r, 300 + Math.random() * 700));
    const ready = workers.filter((w) => w.ready);
    const victim = ready[Math.floor(Math.random() * ready.length)];
    if (victim) {
      await victim.stop('SIGKILL');
      workers.splice(workers.indexOf(victim), 1, await startWorker());
      kills++;
    }
    // Keep runs in flight so every kill lands on work.
    const active = (await q.getJobCounts('active', 'waiting', 'delayed')) as Record<string, number>;
    const pending = (active.active ?? 0) + (active.waiting ?? 0) + (active.delayed ?? 0);
    for (let i = pending; i < IN_FLIGHT; i++) await enqueue();
  }

  await waitFor(async () => (await q.getJobCounts('completed')).completed === runs.length, {
    timeoutMs: 60_000,
    what: `all ${runs.length} runs completed`,
  });

  const { rows } = await pool.query<{ run: string; customer: number; n: number }>(
    'SELECT run, customer, count(*)::int AS n FROM fx_charges GROUP BY run, customer',
  );
  const twice = rows.filter((r) => r.n > 1);
  expect(twice).toEqual([]);
  expect(rows.length).toBe(runs.length * CUSTOMERS); // none lost
  const balances = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM fx_balances WHERE charged <> 1');
  expect(balances.rows[0]?.n).toBe(0);
  for (const run of runs) expect((await q.getJob(run))?.returnvalue).toEqual({ charged: CUSTOMERS });

  // The kills landed on runs in flight: deliveries that lost their worker were taken over and resumed.
  const takeovers = everyWorker.flatMap((w) => w.logs()).filter((l) => l.msg === 'took over a run whose holder stopped renewing its lease');
  expect(takeovers.length).toBeGreaterThanOrEqual(KILLS / 2);
  // ...and inside steps: transactions cut off between their effect and COMMIT were rolled back by PostgreSQL.
  const stats = await pool.query<{ rollbacks: number }>(
    'SELECT xact_rollback::int AS rollbacks FROM pg_stat_database WHERE datname = current_database()',
  );
  // (Measured with 40 kills: 28 runs, 109 takeovers, 74 rolled-back transactions.)
  expect(stats.rows[0]?.rollbacks).toBeGreaterThanOrEqual(KILLS / 4);
  // Every process that got as far as choosing its engine chose the one this case is about.
  const chosen = everyWorker.flatMap((w) => w.logs()).flatMap((l) => (isEngineLine(l.msg) ? [l.msg] : []));
  expect(new Set(chosen)).toEqual(new Set([opts.engine]));
}

const isEngineLine = (msg: unknown): msg is string => typeof msg === 'string' && msg.startsWith('BullMQ engine:');
