/**
 * `pnpm bench`: the cost of the idempotency ledger. Runs the same number of no-op jobs at concurrency 50
 * on the same Redis, in three modes:
 * - bare: a BullMQ Worker whose processor returns at once;
 * - ledger: the same, with the processor wrapped in runExactlyOnce (claim + lease + complete);
 * - tickwork: the worker's real processor (catalog lookup, payload validation, context, ledger).
 *
 * Every mode runs once per round, the order rotating from round to round, so drift (other load on the
 * machine) and position hit each mode alike. A warm-up round (JIT, script cache, connections) is not
 * counted. Every round's jobs get fresh ledger keys: a key left `done` by an earlier round would make the
 * claim take the cheaper duplicate-suppressed path, which is not the cost of a new run. After each ledger
 * round the bench checks that every job did claim and complete its own key.
 *
 * Prints jobs/s per mode per round, then per mode the best and the median, and the slowdown ratios two
 * ways: best bare / best mode, and the median of the per-round ratios (paired rounds: the fairer figure
 * on a noisy machine). Goal: ledger <= 1.3x slower.
 *
 * Env: BENCH_REDIS_URL (else a private redis-server is started), BENCH_JOBS (default 10000),
 * BENCH_ROUNDS (default 5), BENCH_CONCURRENCY (default 50).
 */
import { createCatalog, createExactlyOnce, createRedis, defineJob, runExactlyOnce, type Enqueue, type ExactlyOnce } from '@tickwork/runtime';
import { Redis } from 'ioredis';
import { startRedisServer } from '@tickwork/testkit';
import { createProcessor } from '@tickwork/worker';
import { Queue, Worker, type Job, type Processor } from 'bullmq';
import { pino } from 'pino';
import { z } from 'zod';

const JOBS = Number(process.env.BENCH_JOBS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const WARMUP_JOBS = Math.max(Math.floor(JOBS / 5), 500);
const PREFIX = 'bench';
const silent = pino({ level: 'silent' });

const noop = defineJob({ name: 'bench.noop', queue: 'bench', schema: z.object({ i: z.number() }), handler: async () => null });
const catalog = createCatalog([noop]);

const MODES = ['bare', 'ledger', 'tickwork'] as const;
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
  const processors: Record<Mode, Processor> = {
    bare: async () => null,
    ledger: async (job: Job, token?: string) =>
      runExactlyOnce(
        exactlyOnce,
        {
          key: `bench.noop#${job.id}`,
          log: silent,
          labels: { queue: 'bench', job: 'bench.noop' },
          defer: async () => {
            throw new Error(`unexpected defer of ${job.id} (token ${token})`);
          },
        },
        async () => null,
      ),
    tickwork: createProcessor({ catalog, redis: command, enqueue, log: silent, exactlyOnce }),
  };

  const rates: Record<Mode, number[]> = { bare: [], ledger: [], tickwork: [] };
  const ratios: Record<Exclude<Mode, 'bare'>, number[]> = { ledger: [], tickwork: [] };
  process.stdout.write(
    `tickwork bench: ${JOBS} no-op jobs, concurrency ${CONCURRENCY}, ${ROUNDS} rounds + warm-up (${WARMUP_JOBS} jobs), ` +
      `redis ${own ? 'private' : 'BENCH_REDIS_URL'}\n`,
  );
  let queueNo = 0;
  for (let r = 0; r <= ROUNDS; r++) {
    const warmUp = r === 0;
    const jobs = warmUp ? WARMUP_JOBS : JOBS;
    const order = MODES.map((_, i) => MODES[(i + r) % MODES.length] as Mode);
    const round: Partial<Record<Mode, number>> = {};
    for (const mode of order) {
      const rate = await measure(url, `bench-${queueNo++}`, processors[mode], jobs);
      if (mode !== 'bare') await checkAndClearLedger(command, exactlyOnce, jobs);
      round[mode] = rate;
      process.stdout.write(`  ${warmUp ? 'warm-up' : `round ${r}`.padEnd(7)} ${mode.padEnd(8)} ${rate.toFixed(0).padStart(6)} jobs/s\n`);
    }
    if (warmUp) continue;
    for (const mode of MODES) rates[mode].push(round[mode] as number);
    ratios.ledger.push((round.bare as number) / (round.ledger as number));
    ratios.tickwork.push((round.bare as number) / (round.tickwork as number));
  }
  const best = (m: Mode) => Math.max(...rates[m]);
  const line = (m: Mode) => `${m.padEnd(8)} best ${best(m).toFixed(0).padStart(6)}  median ${median(rates[m]).toFixed(0).padStart(6)} jobs/s`;
  const slowdown = (m: Exclude<Mode, 'bare'>, name: string, goal: boolean) => {
    const b = best('bare') / best(m);
    const med = median(ratios[m]);
    const verdict = goal ? ` (goal <= 1.30x)${Math.max(b, med) <= 1.3 ? '' : '  ABOVE GOAL'}` : '';
    return `${name} slowdown: best-of ${b.toFixed(2)}x, median of paired rounds ${med.toFixed(2)}x` +
      ` [${ratios[m].map((x) => x.toFixed(2)).join(' ')}]${verdict}\n`;
  };
  process.stdout.write(
    `\n${MODES.map(line).join('\n')}\n` + slowdown('ledger', 'ledger', true) + slowdown('tickwork', 'full tickwork processor', false),
  );
  command.disconnect();
  await own?.stop();
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
  for await (const batch of stream) keys.push(...(batch as string[]));
  let done = 0;
  for (let i = 0; i < keys.length; i += 1000) {
    const slice = keys.slice(i, i + 1000);
    const pipeline = redis.pipeline();
    for (const k of slice) pipeline.hmget(k, 'state', 'claims');
    for (const [err, reply] of (await pipeline.exec()) ?? []) {
      const [state, claims] = (reply ?? []) as [string | null, string | null];
      if (!err && state === 'done' && claims === '1') done++;
    }
    await redis.unlink(...slice);
  }
  if (done !== jobs || keys.length !== jobs) {
    throw new Error(`ledger round: expected ${jobs} runs each claimed once and done, found ${done} of ${keys.length} keys`);
  }
}

/** Pre-fills a fresh queue, then times a worker draining it. */
async function measure(url: string, queueName: string, processor: Processor, jobs: number): Promise<number> {
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
  const blocking = createRedis(url, 'blocking');
  const worker = new Worker(queueName, processor, {
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
  await worker.close();
  blocking.disconnect();
  await queue.obliterate({ force: true });
  await queue.close();
  producer.disconnect();
  if (failed > 0) throw new Error(`${failed} of ${jobs} bench jobs failed in ${queueName}`);
  return jobs / seconds;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
