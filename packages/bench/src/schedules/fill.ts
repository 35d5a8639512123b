/**
 * A fill process of the tickwork side: upserts schedules [BENCH_FROM, BENCH_TO) of BENCH_N through the
 * schedule API, as the bench does. Used for the part of a large N beyond the timed upserts, several at once,
 * so a million schedules are stored in minutes; the table says when it was used (report.ts, '+').
 */
import { createLogger, createRedis, QueueSet } from '@tickwork/core';
import { createSchedules } from '@tickwork/schedules';
import { catalog } from './catalog.js';
import { runPool } from './harness.js';
import { spreadFor, type SpreadMode } from './spread.js';
import { scheduleId, tickworkInput } from './tickwork-input.js';

const env = (k: string) => {
  const v = process.env[k];
  if (v === undefined) throw new Error(`${k} is required`);
  return v;
};

async function main(): Promise<void> {
  const spread = spreadFor(Number(env('BENCH_N')), env('BENCH_SPREAD') as SpreadMode);
  const from = Number(env('BENCH_FROM'));
  const to = Number(env('BENCH_TO'));
  const redis = createRedis(env('REDIS_URL'), 'command');
  const queues = new QueueSet(redis, env('QUEUE_PREFIX'), createLogger('bench-fill', 'silent'));
  const schedules = createSchedules({ redis, queues, catalog });
  await runPool(to - from, Number(process.env.BENCH_UPSERT_CONCURRENCY ?? 128), `fill ${from}..${to}`, (k) =>
    schedules.upsert(scheduleId(from + k), tickworkInput(spread, from + k)),
  );
  await queues.close();
  redis.disconnect();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`fill failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
