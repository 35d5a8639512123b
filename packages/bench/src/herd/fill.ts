/**
 * A fill process of `pnpm bench:herd`'s tickwork side: upserts herd schedules [BENCH_FROM, BENCH_TO) through
 * the schedule API, all on BENCH_HERD_PATTERN, so a million are stored in minutes by several at once.
 */
import { createLogger, createRedis, QueueSet } from '@tickwork/core';
import { createSchedules } from '@tickwork/schedules';
import { runPool } from '../schedules/harness.js';
import { herdInput, herdId } from './input.js';

const env = (k: string) => {
  const v = process.env[k];
  if (v === undefined) throw new Error(`${k} is required`);
  return v;
};

async function main(): Promise<void> {
  const from = Number(env('BENCH_FROM'));
  const to = Number(env('BENCH_TO'));
  const pattern = env('BENCH_HERD_PATTERN');
  const redis = createRedis(env('REDIS_URL'), 'command');
  const queues = new QueueSet(redis, env('QUEUE_PREFIX'), createLogger('bench-fill', 'silent'));
  const schedules = createSchedules({ redis, queues, catalog: (await import('../schedules/catalog.js')).catalog });
  await runPool(to - from, 128, `fill ${from}..${to}`, (k) => schedules.upsert(herdId(from + k), herdInput(pattern, from + k)));
  await queues.close();
  redis.disconnect();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`herd fill failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
