/**
 * `pnpm bench`: the cost of the idempotency ledger. Runs the same number of no-op jobs at concurrency 50
 * on the same Redis, alternating modes so drift (other load on the machine) hits each alike:
 * - bare: a BullMQ Worker whose processor returns at once;
 * - ledger: the same, with the processor wrapped in runExactlyOnce (claim + lease + complete);
 * - tickwork: the worker's real processor (catalog lookup, payload validation, context, ledger).
 * Prints jobs/s per mode (best of the rounds) and the slowdown ratios. Goal: ledger <= 1.3x slower.
 *
 * Env: BENCH_REDIS_URL (else a private redis-server is started), BENCH_JOBS (default 10000),
 * BENCH_ROUNDS (default 3), BENCH_CONCURRENCY (default 50).
 */
import { createCatalog, createExactlyOnce, createRedis, defineJob, redisOptions, runExactlyOnce, type Enqueue } from '@tickwork/runtime';
import { Redis } from 'ioredis';
import { startRedisServer } from '@tickwork/testkit';
import { createProcessor } from '@tickwork/worker';
import { Queue, Worker, type Job, type Processor } from 'bullmq';
import { pino } from 'pino';
import { z } from 'zod';

const JOBS = Number(process.env.BENCH_JOBS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const PREFIX = 'bench';
const silent = pino({ level: 'silent' });

const noop = defineJob({ name: 'bench.noop', queue: 'bench', schema: z.object({ i: z.number() }), handler: async () => null });
const catalog = createCatalog([noop]);

type Mode = 'bare' | 'ledger' | 'tickwork';

async function main(): Promise<void> {
  const own = process.env.BENCH_REDIS_URL ? undefined : await startRedisServer();
  const url = process.env.BENCH_REDIS_URL ?? (own as NonNullable<typeof own>).url;
  // The ledger's connection auto-pipelines: the claims and completions of 50 concurrent jobs share writes.
  const command = new Redis(url, { ...redisOptions('command'), enableAutoPipelining: true });
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

  const best: Record<Mode, number> = { bare: 0, ledger: 0, tickwork: 0 };
  process.stdout.write(`tickwork bench: ${JOBS} no-op jobs, concurrency ${CONCURRENCY}, ${ROUNDS} rounds, redis ${own ? 'private' : 'BENCH_REDIS_URL'}\n`);
  let round = 0;
  for (let r = 0; r < ROUNDS; r++) {
    for (const mode of ['bare', 'ledger', 'tickwork'] as const) {
      const rate = await measure(url, `bench-${round++}`, processors[mode]);
      best[mode] = Math.max(best[mode], rate);
      process.stdout.write(`  round ${r + 1} ${mode.padEnd(8)} ${rate.toFixed(0).padStart(6)} jobs/s\n`);
    }
  }
  const ratio = (m: Mode) => best.bare / best[m];
  process.stdout.write(
    `\nbest jobs/s: bare ${best.bare.toFixed(0)}, with ledger ${best.ledger.toFixed(0)}, tickwork processor ${best.tickwork.toFixed(0)}\n` +
      `ledger slowdown: ${ratio('ledger').toFixed(2)}x (goal <= 1.30x)${ratio('ledger') <= 1.3 ? '' : '  ABOVE GOAL'}\n` +
      `full tickwork processor slowdown: ${ratio('tickwork').toFixed(2)}x\n`,
  );
  command.disconnect();
  await own?.stop();
  process.exit(0);
}

/** Pre-fills a fresh queue, then times a worker draining it. */
async function measure(url: string, queueName: string, processor: Processor): Promise<number> {
  const producer = createRedis(url, 'command');
  const queue = new Queue(queueName, { connection: producer, prefix: PREFIX });
  for (let i = 0; i < JOBS; i += 1000) {
    const n = Math.min(1000, JOBS - i);
    await queue.addBulk(
      Array.from({ length: n }, (_, k) => ({
        name: noop.name,
        data: { i: i + k },
        opts: { removeOnComplete: true, removeOnFail: true },
      })),
    );
  }
  let done = 0;
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
    if (++done === JOBS) finish();
  });
  worker.on('failed', (job, err) => {
    process.stderr.write(`job ${job?.id} failed: ${err.message}\n`);
    if (++done === JOBS) finish();
  });
  await finished;
  const seconds = (performance.now() - started) / 1000;
  await worker.close();
  blocking.disconnect();
  await queue.obliterate({ force: true });
  await queue.close();
  producer.disconnect();
  return JOBS / seconds;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
