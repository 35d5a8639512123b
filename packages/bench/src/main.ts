/**
 * `pnpm bench`: what tickwork's guarantees cost against bare BullMQ, on the same Redis, as ratios measured
 * in the same run, with issue 13's targets and their verdicts (MET / NOT MET). Three series:
 * - no-op jobs at concurrency 50 (BENCH_CONCURRENCY), in four modes: bare (a BullMQ Worker whose processor
 *   returns at once); floor (the same awaiting one PING per job: what any check made before running a job
 *   costs at least); ledger (runExactlyOnce with a key of its own per job: claim up front, result written
 *   ahead of the ack); tickwork (the worker's real processor, with its running jobs and cancel listener as
 *   the worker app has them: catalog lookup, payload validation, cancel gate, ledger, metrics, the charts'
 *   counts (CHART_HISTORY on, its default); history for scheduled runs). Target 1: tickwork >= 0.90x bare. A fifth mode, batch,
 *   drains the same no-op job defined as a batch job (defineBatchJob) through the worker's BatchRunner; a
 *   sixth, pg-boss (the peer, if PostgreSQL is reachable: pgboss.ts), drains the same number of no-op jobs
 *   in each round, so target 5 (tickwork >= 2x pg-boss) is a paired ratio too, printed for batch jobs and
 *   for jobs one at a time; its line also gives what a job cost each side in CPU in all (Node and Redis;
 *   Node and PostgreSQL, where PostgreSQL is this machine's). BENCH_BATCH_SIZE (default 1000),
 *   BENCH_BATCH_CONCURRENCY (2) and BENCH_BATCH_KEEP (completed jobs kept, default 0 as the other modes'
 *   removeOnComplete) set the batch job.
 * - no-op jobs at concurrency 1 (latency, not batching, shows): bare and tickwork. Target 1 again.
 * - a job writing one Redis key, at concurrency 50: bare (a BullMQ Worker awaiting that SET), tickwork
 *   with the write in one `ctx.redisStep`, and tickwork with it in one `ctx.step`. Target 2: >= 0.80x bare
 *   and at most one extra request to Redis per job (awaited or not): the commands this process sent, each
 *   ledger operation counted as one even when batched with others (measure.ts).
 *
 * Every mode of a series runs once per round, the order rotating from round to round, so drift (other load
 * on the machine) and position hit each mode alike. A warm-up round is not counted. Ratios are the median
 * of the per-round ratios (paired rounds: the fair figure on a noisy machine). Every round's jobs are new
 * (fresh queues, and fresh ledger keys in the ledger mode, checked after each round). Then the cluster row
 * (cluster.ts), the recovery section (recovery.ts) and the scheduled lane (lane.ts).
 *
 * Env: BENCH_REDIS_URL (else a private redis-server is started), BENCH_JOBS (default 10000), BENCH_JOBS_C1
 * (default 2000), BENCH_ROUNDS (default 9), BENCH_CONCURRENCY (default 50), BENCH_RECOVERY=0 (no recovery
 * section), BENCH_LANE=0 (no scheduled-lane section), BENCH_LANE_SECONDS (default 45), BENCH_CLUSTER=0 (no
 * cluster row; cluster.ts has its own settings), BENCH_SERIES (c50,c1,write: which series run; with some only,
 * their no-op targets are printed and the run ends there), BENCH_TRACES=0 (no traces mode: traces.ts).
 */
import { createCatalog, createRedis, defineBatchJob, defineJob, scanKeys, type Enqueue } from '@tickwork/core';
import { createExactlyOnce, parseLedgerRecord, runExactlyOnce, type ExactlyOnce } from '@tickwork/exactly-once';
import type { RedisClient } from '@tickwork/core';
import { startRedisServer } from '@tickwork/testkit';
import { createProcessor, RunningJobs, soleDeliveryCheck, startCancelListener } from '@tickwork/worker';
import { createEngine, type Engine } from '@tickwork/bullmq-engine';
import { TimelineWriter } from '@tickwork/operations';
import { ackConnectionOf } from '@tickwork/bullmq-engine/testing';
import type { Job } from 'bullmq';
import { pino } from 'pino';
import { z } from 'zod';
import { measureBatch, stockWorker, type ProcessorFor, type WorkerMaker } from './measure.js';
import { ROUNDS, runSeries, type Series, type SeriesResult } from './series.js';
import { noopTargetLine, peerLine, targetsReport } from './targets.js';
import { openPgBossBench } from './pgboss.js';
import { benchRecovery } from './recovery.js';
import { laneSection } from './lane.js';
import { clusterSection } from './cluster.js';
import { startBenchTraces, tracesLine } from './traces.js';

const JOBS = Number(process.env.BENCH_JOBS ?? 10_000);
const JOBS_C1 = Number(process.env.BENCH_JOBS_C1 ?? 2_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
/** The series, by key, in the order they run; BENCH_SERIES=c1 (say) runs that one alone and prints its target. */
const SERIES_KEYS = ['c50', 'c1', 'write'];
const SERIES = (process.env.BENCH_SERIES ?? SERIES_KEYS.join(',')).split(',').map((s) => s.trim()).filter((s) => SERIES_KEYS.includes(s));
/** Issue 13's targets. */
const silent = pino({ level: 'silent' });
const written = (id: string | undefined) => `bench:w:${id}`;

const noop = defineJob({ name: 'bench.noop', queue: 'bench', schema: z.object({ i: z.number() }), handler: async () => null });
const redisStepWrite = defineJob({
  name: 'bench.redis-step',
  queue: 'bench',
  schema: z.object({ i: z.number() }),
  handler: async (ctx) => ctx.redisStep('write', (tx) => (tx.set(written(ctx.jobId), '1'), null)),
});
const stepWrite = defineJob({
  name: 'bench.step',
  queue: 'bench',
  schema: z.object({ i: z.number() }),
  handler: async (ctx) => ctx.step('write', async () => (await ctx.redis.set(written(ctx.jobId), '1'), null)),
});
const catalog = createCatalog([noop, redisStepWrite, stepWrite]);
/**
 * The same no-op job as a batch job (defineBatchJob), as pg-boss's handler takes it: a batch at a time.
 * Completed jobs deleted as they complete (keepCompleted 0), as the other modes' jobs are (removeOnComplete).
 */
const BATCH_SIZE = Number(process.env.BENCH_BATCH_SIZE ?? 1000);
const BATCH_CONCURRENCY = Number(process.env.BENCH_BATCH_CONCURRENCY ?? 2);
const batchNoop = defineBatchJob({ name: 'bench.batch-noop', queue: 'bench-batch', schema: z.object({ i: z.number() }), batch: { size: BATCH_SIZE, concurrency: BATCH_CONCURRENCY, keepCompleted: Number(process.env.BENCH_BATCH_KEEP ?? 0), handler: async () => undefined } });
createCatalog([batchNoop]);

async function main(): Promise<void> {
  const own = process.env.BENCH_REDIS_URL ? undefined : await startRedisServer();
  const url = process.env.BENCH_REDIS_URL ?? (own as NonNullable<typeof own>).url;
  // The ledger's connection is made as the worker makes it (worker-pool.ts): a plain command connection.
  const command = createRedis(url, 'command');
  // The worker's two ways to run BullMQ (@tickwork/bullmq-engine): its fast paths, and BullMQ's public
  // paths only (the installed BullMQ not matching the engine's contract, or WORKER_BULLMQ_FAST_PATH=off).
  const fast = createEngine({ log: silent });
  if (fast.mode !== 'fast') throw new Error(`the engine's contract does not hold here: ${fast.mismatches.map((m) => m.name).join(', ')}`);
  const pub = createEngine({ log: silent, fastPath: 'off' });
  fast.holdEveryCommand(command);
  const exactlyOnce = createExactlyOnce(command, { prefix: 'bench' });
  // The public path's own ledger connection, with no hold on its writes (the cork is a fast path).
  const pubCommand = createRedis(url, 'command');
  const pubExactlyOnce = createExactlyOnce(pubCommand, { prefix: 'bench' });
  const enqueue: Enqueue = async () => {
    throw new Error('the bench jobs enqueue nothing');
  };
  // As the worker app makes it (worker-pool.ts), without recovery: the bench has no reaper, so BullMQ's
  // lock (its default, 30 s) is all that could deliver a job again.
  const soleDelivery = soleDeliveryCheck({ lockDurationMs: 30_000, unrecordedAtDelivery: fast.unrecordedAtDelivery });
  // Its running jobs and its cancel listener, as the worker app has them: a cancel (and a shutdown) can
  // reach every job, and each job start asks the cancel gate.
  const running = new RunningJobs();
  const cancels = startCancelListener({ redisTarget: url, redis: command, prefix: 'bench', log: silent, cancelRunning: (queue, jobId, reason) => running.cancel(queue, jobId, reason) });
  await cancels.ready;
  // The charts' history, on as the worker app has it by default (CHART_HISTORY=on): every attempt counted in
  // memory, flushed every 5 s (one script call per queue).
  const timeline = new TimelineWriter({ redis: command, prefix: 'bench', log: silent });
  timeline.start();
  const tickwork: ProcessorFor = (ack) => createProcessor({ catalog, redis: command, enqueue, log: silent, exactlyOnce, soleDelivery, running, cancels, ackConnectionOf: ack, timeline });
  // BENCH_TRACES=0 leaves the traces mode out (traces.ts): the same processor with OpenTelemetry traces on.
  const traces = process.env.BENCH_TRACES === '0' ? undefined : await startBenchTraces();
  const tracesMode: Series['modes'] = traces
    ? {
        traced: {
          job: noop.name,
          // Made while traces are on: its stages run in spans; its Worker gets BullMQ's telemetry (BullMQ's own processJob then).
          processor: (ack) => (traces.on(), tickwork(ack)),
          after: async () => traces.off(),
          maker: { create: (name, processor, opts) => fast.createWorker(name, processor, { ...opts, telemetry: traces.telemetry }), ackOf: (worker) => fast.ackConnectionOf?.(worker) },
        },
      }
    : {};
  // As the worker pool makes it on the public paths: no sole deliveries, results awaited, no stall resets.
  const tickworkPublic: ProcessorFor = () => createProcessor({ catalog, redis: pubCommand, enqueue, log: silent, exactlyOnce: pubExactlyOnce, running, cancels, timeline });
  const fastMaker = engineMaker(fast);
  const pubMaker = engineMaker(pub);
  // The ledger alone writes its results ahead on the Worker's connection, held as the fast path holds it.
  const ledgerMaker: WorkerMaker = { ...stockWorker, ackOf: (w) => ackConnectionOf(w)?.then((c) => (fast.holdWrites(c), c)) };
  const bare: ProcessorFor = () => async () => null;
  const clearWritten = (jobs: number) => clearKeys(command, written('*'), jobs);
  const noopModes = (withLedger: boolean): Series['modes'] => ({
    bare: { job: noop.name, processor: bare },
    ...(withLedger && {
      floor: { job: noop.name, processor: () => async () => (await command.ping(), null) },
      ledger: { job: noop.name, processor: ledgerMode(exactlyOnce), after: (jobs: number) => checkAndClearLedger(command, exactlyOnce, jobs), maker: ledgerMaker },
    }),
    tickwork: { job: noop.name, processor: tickwork, maker: fastMaker },
    public: { job: noop.name, processor: tickworkPublic, maker: pubMaker },
  });
  // pg-boss is a mode of the concurrency-50 series, so its rounds are paired with tickwork's (target 5).
  const pgboss = await openPgBossBench();
  const peerMode: Series['modes'] =
    typeof pgboss === 'string' ? {} : { 'pg-boss': { drain: async (jobs) => ({ ...(await pgboss.measure(jobs)), redisUs: NaN, commandsPerJob: NaN, completionsPerCall: undefined }) } };
  let batchQueues = 0;
  const batchMode: Series['modes'] = {
    batch: { drain: (jobs) => measureBatch(url, `bench-batch-${batchQueues++}`, batchNoop, jobs, fast) },
    'batch public': { drain: (jobs) => measureBatch(url, `bench-batch-${batchQueues++}`, batchNoop, jobs, pub) },
  };
  const series: Series[] = [
    { title: `no-op jobs, concurrency ${CONCURRENCY}`, concurrency: CONCURRENCY, jobs: JOBS, modes: { ...noopModes(true), ...tracesMode, ...batchMode, ...peerMode } },
    { title: 'no-op jobs, concurrency 1', concurrency: 1, jobs: JOBS_C1, modes: noopModes(false) },
    {
      title: `one Redis write per job, concurrency ${CONCURRENCY}`,
      concurrency: CONCURRENCY,
      jobs: JOBS,
      modes: {
        bare: { job: noop.name, processor: () => async (job: Job) => (await command.set(written(job.id), '1'), null), after: clearWritten },
        'redisStep': { job: redisStepWrite.name, processor: tickwork, after: clearWritten, maker: fastMaker },
        'step': { job: stepWrite.name, processor: tickwork, after: clearWritten, maker: fastMaker },
        'redisStep public': { job: redisStepWrite.name, processor: tickworkPublic, after: clearWritten, maker: pubMaker },
        'step public': { job: stepWrite.name, processor: tickworkPublic, after: clearWritten, maker: pubMaker },
      },
    },
  ];
  process.stdout.write(`tickwork bench: ${ROUNDS} rounds + warm-up per series, redis ${own ? 'private' : 'BENCH_REDIS_URL'}\n`);
  let queueNo = 0;
  const results: (SeriesResult | undefined)[] = [];
  for (const [i, s] of series.entries()) {
    if (!SERIES.includes(SERIES_KEYS[i] as string)) {
      results.push(undefined);
      continue;
    }
    process.stdout.write(`\n${s.title}: ${s.jobs} jobs per mode and round\n`);
    results.push(await runSeries(url, s, () => `bench-${queueNo++}`, exactlyOnce.ledger.batcher.sent));
  }
  const [c50, c1, write] = results;
  /** What the series held, let go once (the partial run's early end and the full run's). */
  const release = async () => {
    cancels.close();
    await timeline.stop();
    command.disconnect();
    pubCommand.disconnect();
    await own?.stop();
  };
  if (!c50 || !c1 || !write) {
    // BENCH_SERIES named some series only: their no-op targets, the rest not measured.
    process.stdout.write(`\ntargets measured in this run (BENCH_SERIES=${SERIES.join(',')}; the others not measured):\n`);
    if (c50) process.stdout.write(noopTargetLine(c50, CONCURRENCY));
    if (c1) process.stdout.write(noopTargetLine(c1, 1));
    await traces?.close();
    if (typeof pgboss !== 'string') await pgboss.close();
    await release();
    process.exit(0);
  }
  process.stdout.write(targetsReport({ c50, c1, write, concurrency: CONCURRENCY, ledgerSent: exactlyOnce.ledger.batcher.sent }));
  if (traces) {
    process.stdout.write(tracesLine(c50, traces));
    await traces.close();
  }
  if (typeof pgboss === 'string') process.stdout.write(`  5. tickwork against pg-boss: skipped, ${pgboss}\n`);
  else {
    process.stdout.write(peerLine(c50, pgboss.settings, { size: BATCH_SIZE, concurrency: BATCH_CONCURRENCY }));
    await pgboss.close();
  }
  await release();
  // BENCH_CLUSTER=0 leaves the cluster row out (one node against a 3-master cluster; about 2 minutes).
  if (process.env.BENCH_CLUSTER !== '0') await clusterSection((s) => process.stdout.write(s));
  // BENCH_RECOVERY=0 leaves the recovery section out (a quick look at the throughput targets).
  if (process.env.BENCH_RECOVERY !== '0') await benchRecovery();
  // BENCH_LANE=0 leaves the scheduled-lane section out (target 3; about 4 minutes).
  if (process.env.BENCH_LANE !== '0') await laneSection((s) => process.stdout.write(s));
  process.exit(0);
}


/** An engine's Worker, its acknowledgements on the connection the engine hands out (folded on the fast path). */
function engineMaker(engine: Engine): WorkerMaker {
  return {
    create: (name, processor, opts) => engine.createWorker(name, processor, opts),
    ackOf: (worker) => engine.ackConnectionOf?.(worker),
  };
}

/** The ledger alone: runExactlyOnce with a key of its own per job (claimed up front). */
function ledgerMode(exactlyOnce: ExactlyOnce): ProcessorFor {
  return (ack) => async (job: Job, token?: string) =>
    runExactlyOnce(
      exactlyOnce,
      {
        key: `bench.noop#${job.id}`,
        log: silent,
        labels: { queue: 'bench', job: 'bench.noop' },
        ackConnection: await ack(),
        defer: async () => {
          throw new Error(`unexpected defer of ${job.id} (token ${token})`);
        },
      },
      async () => null,
    );
}


/** Deletes the keys a write series left (outside the timing). */
async function clearKeys(redis: RedisClient, match: string, expected: number): Promise<void> {
  // SCAN may return a key more than once (while Redis resizes the keyspace, which these deletes cause).
  const seen = new Set<string>();
  for await (const keys of scanKeys(redis, match)) {
    for (const k of keys) seen.add(k);
    if (keys.length > 0) await redis.unlink(...keys);
  }
  if (seen.size !== expected) throw new Error(`write round: expected ${expected} keys written, found ${seen.size}`);
}

/**
 * Every job of the round must have claimed and completed its own new key (a `done` key found instead
 * would mean the round measured duplicate suppression); then the keys go, so the next round starts fresh.
 */
async function checkAndClearLedger(redis: RedisClient, eo: ExactlyOnce, jobs: number): Promise<void> {
  const found = new Set<string>(); // SCAN may return a key more than once
  for await (const batch of scanKeys(redis, eo.ledger.keyOf('*'))) for (const k of batch) if (!k.endsWith(':steps')) found.add(k);
  const keys = [...found];
  let done = 0;
  for (let i = 0; i < keys.length; i += 1000) {
    const slice = keys.slice(i, i + 1000);
    const pipeline = redis.pipeline();
    for (const k of slice) pipeline.get(k);
    for (const [err, reply] of (await pipeline.exec()) ?? []) {
      const record = typeof reply === 'string' ? parseLedgerRecord(reply) : undefined;
      if (!err && record?.state === 'd' && record.claims === 1) done++;
    }
    await redis.unlink(...slice);
  }
  if (done !== jobs || keys.length !== jobs) {
    throw new Error(`ledger round: expected ${jobs} runs each claimed once and done, found ${done} of ${keys.length} keys`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
