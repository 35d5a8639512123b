/**
 * `pnpm bench`: the cost of the idempotency ledger. Runs the same number of no-op jobs at concurrency 50
 * on the same Redis, in four modes:
 * - bare: a BullMQ Worker whose processor returns at once;
 * - floor: the same, awaiting one PING on the ledger's connection per job. Any ledger that checks before
 *   running a job costs at least this round trip, so it is the reference the ledger is held against;
 * - ledger: the processor wrapped in runExactlyOnce (claim, lease, result written ahead of the ack);
 * - tickwork: the worker's real processor (catalog lookup, payload validation, context, history, ledger).
 *
 * Every mode runs once per round, the order rotating from round to round, so drift (other load on the
 * machine) and position hit each mode alike. A warm-up round (JIT, script cache, connections) is not
 * counted. Every round's jobs get fresh ledger keys: a key left `done` by an earlier round would make the
 * claim take the cheaper duplicate-suppressed path, which is not the cost of a new run. After each ledger
 * round the bench checks that every job did claim and complete its own key.
 *
 * Prints, per mode and round, jobs/s and the CPU each job cost the worker process (Node) and Redis; then
 * per mode the best and the median, and slowdowns against bare as the median of the per-round ratios
 * (paired rounds: the fair figure on a noisy machine) beside best-of, and the ledger against the floor.
 *
 * Env: BENCH_REDIS_URL (else a private redis-server is started), BENCH_JOBS (default 10000),
 * BENCH_ROUNDS (default 5), BENCH_CONCURRENCY (default 50).
 */
import { completionWriter, createCatalog, createExactlyOnce, parseLedgerRecord, createRedis, defineJob, runExactlyOnce, type Enqueue, type ExactlyOnce } from '@tickwork/runtime';
import { Redis } from 'ioredis';
import { startRedisServer } from '@tickwork/testkit';
import { ackConnectionOf, createProcessor } from '@tickwork/worker';
import { Queue, Worker, type Job, type Processor } from 'bullmq';
import { pino } from 'pino';
import { z } from 'zod';
import { openPgBossBench } from './pgboss.js';
import { benchRecovery } from './recovery.js';

const JOBS = Number(process.env.BENCH_JOBS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const WARMUP_JOBS = Math.max(Math.floor(JOBS / 5), 500);
const PREFIX = 'bench';
/**
 * The issue asked for the ledger at most 1.3x slower than bare BullMQ here. One awaited round trip per job
 * (the floor mode) already costs about that at concurrency 50 on a 2-core machine, so the bar the ledger is
 * held to is relative to the floor measured in the same run: at most 1.2x of it (README, Cost).
 */
const FLOOR_GOAL = 1.2;
/** Issue 13: tickwork with every feature on at least twice pg-boss's no-op throughput, same run. */
const PEER_GOAL = 2;
const silent = pino({ level: 'silent' });

const noop = defineJob({ name: 'bench.noop', queue: 'bench', schema: z.object({ i: z.number() }), handler: async () => null });
const catalog = createCatalog([noop]);

const MODES = ['bare', 'floor', 'ledger', 'tickwork'] as const;
type Mode = (typeof MODES)[number];

async function main(): Promise<void> {
  const own = process.env.BENCH_REDIS_URL ? undefined : await startRedisServer();
  const url = process.env.BENCH_REDIS_URL ?? (own as NonNullable<typeof own>).url;
  // The ledger's connection is made as the worker makes it (worker-pool.ts): a plain command connection.
  const command = createRedis(url, 'command');
  const exactlyOnce = createExactlyOnce(command, { prefix: PREFIX });
  const enqueue: Enqueue = async () => {
    throw new Error('the bench job enqueues nothing');
  };
  // Each mode's processor is made for the Worker that runs it: the ledger writes results ahead of the
  // acknowledgement on that Worker's connection, as the worker app does (worker-pool.ts).
  const processors: Record<Mode, (ack: () => Promise<Redis> | undefined) => Processor> = {
    bare: () => async () => null,
    floor: () => async () => {
      await command.ping();
      return null;
    },
    ledger: (ack) => async (job: Job, token?: string) =>
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
      ),
    tickwork: (ack) => createProcessor({ catalog, redis: command, enqueue, log: silent, exactlyOnce, ackConnectionOf: ack }),
  };

  const rates: Record<Mode, number[]> = { bare: [], floor: [], ledger: [], tickwork: [] };
  const ratios: Record<Exclude<Mode, 'bare'>, number[]> = { floor: [], ledger: [], tickwork: [] };
  process.stdout.write(
    `tickwork bench: ${JOBS} no-op jobs, concurrency ${CONCURRENCY}, ${ROUNDS} rounds + warm-up (${WARMUP_JOBS} jobs), ` +
      `redis ${own ? 'private' : 'BENCH_REDIS_URL'}\n`,
  );
  const pgboss = await openPgBossBench();
  process.stdout.write(`peer: ${typeof pgboss === 'string' ? `skipped, ${pgboss}` : pgboss.settings}\n`);
  const peerRates: number[] = [];
  const peerRatios: number[] = [];
  let queueNo = 0;
  for (let r = 0; r <= ROUNDS; r++) {
    const warmUp = r === 0;
    const jobs = warmUp ? WARMUP_JOBS : JOBS;
    const order = MODES.map((_, i) => MODES[(i + r) % MODES.length] as Mode);
    const round: Partial<Record<Mode, number>> = {};
    for (const mode of order) {
      const m = await measure(url, `bench-${queueNo++}`, processors[mode], jobs);
      // The ledger mode keeps records under their own keys (as runs with an idempotency key do): check each
      // job claimed and completed its own. The full processor keeps a job-id run's record in the job's hash,
      // which removeOnComplete deletes with the job; each round's queue is new, so no run there is a duplicate.
      if (mode === 'ledger') await checkAndClearLedger(command, exactlyOnce, jobs);
      round[mode] = m.rate;
      process.stdout.write(
        `  ${warmUp ? 'warm-up' : `round ${r}`.padEnd(7)} ${mode.padEnd(8)} ${m.rate.toFixed(0).padStart(6)} jobs/s` +
          `   cpu per job: node ${m.nodeUs.toFixed(0).padStart(3)} us, redis ${m.redisUs.toFixed(0).padStart(3)} us` +
          `${m.completionsPerCall === undefined ? '' : `   results per write-ahead call: ${m.completionsPerCall.toFixed(1)}`}\n`,
      );
    }
    if (typeof pgboss !== 'string') {
      const p = await pgboss.measure(jobs);
      process.stdout.write(
        `  ${warmUp ? 'warm-up' : `round ${r}`.padEnd(7)} pg-boss  ${p.rate.toFixed(0).padStart(6)} jobs/s   cpu per job: node ${p.nodeUs.toFixed(0).padStart(3)} us\n`,
      );
      if (!warmUp) {
        peerRates.push(p.rate);
        peerRatios.push((round.tickwork as number) / p.rate);
      }
    }
    if (warmUp) continue;
    for (const mode of MODES) rates[mode].push(round[mode] as number);
    for (const mode of ['floor', 'ledger', 'tickwork'] as const) ratios[mode].push((round.bare as number) / (round[mode] as number));
  }
  const sent = exactlyOnce.ledger.batcher.sent;
  const best = (m: Mode) => Math.max(...rates[m]);
  const line = (m: Mode) => `${m.padEnd(8)} best ${best(m).toFixed(0).padStart(6)}  median ${median(rates[m]).toFixed(0).padStart(6)} jobs/s`;
  const slowdown = (m: Exclude<Mode, 'bare'>, name: string, goal: boolean) => {
    const b = best('bare') / best(m);
    const med = median(ratios[m]);
    const verdict = goal ? ` (issue goal <= 1.30x)${Math.max(b, med) <= 1.3 ? '' : '  ABOVE GOAL'}` : '';
    return `${name} slowdown: best-of ${b.toFixed(2)}x, median of paired rounds ${med.toFixed(2)}x` +
      ` [${ratios[m].map((x) => x.toFixed(2)).join(' ')}]${verdict}\n`;
  };
  const ledgerOverFloor = median(ratios.ledger.map((x, i) => x / (ratios.floor[i] as number)));
  process.stdout.write(
    `\n${MODES.map(line).join('\n')}\n` +
      slowdown('floor', 'floor (one round trip per job)', false) +
      slowdown('ledger', 'ledger', true) +
      slowdown('tickwork', 'full tickwork processor', false) +
      `ledger against the floor: ${ledgerOverFloor.toFixed(2)}x, median of paired rounds ` +
      `(restated goal <= ${FLOOR_GOAL.toFixed(2)}x)${ledgerOverFloor <= FLOOR_GOAL ? '' : '  ABOVE GOAL'}\n` +
      `ledger calls per batch on its own connection: ${(sent.ops / Math.max(sent.batches, 1)).toFixed(1)}\n`,
  );
  if (typeof pgboss !== 'string') {
    const peer = median(peerRatios);
    process.stdout.write(
      `pg-boss  best ${Math.max(...peerRates).toFixed(0).padStart(6)}  median ${median(peerRates).toFixed(0).padStart(6)} jobs/s\n` +
        `tickwork (every feature on) against pg-boss: ${peer.toFixed(2)}x, median of paired rounds [${peerRatios.map((x) => x.toFixed(2)).join(' ')}]` +
        ` (target >= ${PEER_GOAL.toFixed(1)}x): ${peer >= PEER_GOAL ? 'MET' : 'NOT MET'}\n`,
    );
    await pgboss.close();
  }
  command.disconnect();
  await own?.stop();
  await benchRecovery();
  process.exit(0);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/**
 * Every job of the round must have claimed and completed its own new key (a `done` key found instead
 * would mean the round measured duplicate suppression); then the keys go, so the next round starts fresh.
 */
async function checkAndClearLedger(redis: Redis, eo: ExactlyOnce, jobs: number): Promise<void> {
  const keys: string[] = [];
  const stream = redis.scanStream({ match: eo.ledger.keyOf('*'), count: 1000 });
  for await (const batch of stream) keys.push(...(batch as string[]).filter((k) => !k.endsWith(':steps')));
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

/** Pre-fills a fresh queue, then times a worker draining it. */
async function measure(
  url: string,
  queueName: string,
  processorFor: (ack: () => Promise<Redis> | undefined) => Processor,
  jobs: number,
): Promise<{ rate: number; nodeUs: number; redisUs: number; completionsPerCall: number | undefined }> {
  const producer = createRedis(url, 'command');
  const queue = new Queue(queueName, { connection: producer, prefix: PREFIX });
  for (let i = 0; i < jobs; i += 1000) {
    const n = Math.min(1000, jobs - i);
    await queue.addBulk(
      Array.from({ length: n }, (_, k) => ({
        name: noop.name,
        data: { i: i + k },
        opts: { removeOnComplete: true, removeOnFail: true },
      })),
    );
  }
  let done = 0;
  let failed = 0;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const started = performance.now();
  const cpu0 = process.cpuUsage();
  const rcpu0 = await redisCpu(producer);
  const blocking = createRedis(url, 'blocking');
  const worker: Worker = new Worker(queueName, processorFor(() => ackConnectionOf(worker)), {
    connection: blocking,
    prefix: PREFIX,
    concurrency: CONCURRENCY,
  });
  worker.on('completed', () => {
    if (++done === jobs) finish();
  });
  worker.on('failed', (job, err) => {
    if (failed++ < 5) process.stderr.write(`job ${job?.id} failed: ${err.message}\n`);
    if (++done === jobs) finish();
  });
  await finished;
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const redisSeconds = (await redisCpu(producer)) - rcpu0;
  const ack = await ackConnectionOf(worker);
  const written = ack ? completionWriter(ack).sent : undefined;
  const completionsPerCall = written && written.batches > 0 ? written.ops / written.batches : undefined;
  await worker.close();
  blocking.disconnect();
  await queue.obliterate({ force: true });
  await queue.close();
  producer.disconnect();
  if (failed > 0) throw new Error(`${failed} of ${jobs} bench jobs failed in ${queueName}`);
  return { rate: jobs / seconds, nodeUs: (cpu.user + cpu.system) / jobs, redisUs: (redisSeconds * 1e6) / jobs, completionsPerCall };
}

/** CPU seconds the Redis server has used so far (user + system). */
async function redisCpu(r: Redis): Promise<number> {
  const info = await r.info('cpu');
  const get = (k: string) => Number(new RegExp(`${k}:([0-9.]+)`).exec(info)?.[1] ?? 0);
  return get('used_cpu_user') + get('used_cpu_sys');
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
