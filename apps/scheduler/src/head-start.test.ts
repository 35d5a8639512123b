/**
 * The scheduler's head start follows the worker registry: the configured head start while every registered
 * worker process holds early occurrences (or none is registered), none while a process of an earlier
 * tickwork (registered without `h:`) is; a read that fails keeps the last answer. Batches of occurrences
 * likewise: used while every registered worker process runs them (`b:`).
 */
import { createHeadStart, headStartGauge } from '@tickwork/schedules';
import { createLogger, WorkerRegistry, workersKey } from '@tickwork/core';
import { afterEach, expect, it } from 'vitest';
import { useRedisPerFile } from './testing/redis-per-file.js';

const t = useRedisPerFile();
const log = createLogger('test', 'silent');
const PREFIX = 'hs';
const registries: WorkerRegistry[] = [];
/** What /metrics says (tickwork_schedule_head_start_seconds). */
const gauge = async () => (await headStartGauge.get()).values[0]?.value;
afterEach(async () => {
  await Promise.all(registries.splice(0).map((r) => r.stop(true)));
  await t.redis.flushall();
});

/** A worker process's registry, as a worker of this tickwork (`holds`) or of an earlier one registers it. */
async function workerProcess(holds: boolean, carries = holds): Promise<WorkerRegistry> {
  const r = new WorkerRegistry(t.redis, { prefix: PREFIX, heartbeatMs: 1000, deadAfterMs: 3000, forgetAfterMs: 60_000, log, holdsEarlyOccurrences: holds, carriesBatches: carries });
  registries.push(r);
  await r.start();
  return r;
}

it('is the configured head start with no worker registered, and while every registered one holds early occurrences', async () => {
  const hs = createHeadStart({ redis: t.redis, prefix: PREFIX, configuredMs: 50, log });
  expect(hs.current()).toBe(0); // nothing read yet
  await hs.refresh();
  expect(hs.current()).toBe(50);
  await workerProcess(true);
  await workerProcess(true);
  await hs.refresh();
  expect(hs.current()).toBe(50);
});

it('is none while a worker process of an earlier tickwork is registered, and comes back once it leaves', async () => {
  await workerProcess(true);
  const earlier = await workerProcess(false);
  const hs = createHeadStart({ redis: t.redis, prefix: PREFIX, configuredMs: 50, log });
  await hs.refresh();
  expect(hs.current()).toBe(0);
  expect(await gauge()).toBe(0);
  await earlier.stop(true);
  await hs.refresh();
  expect(hs.current()).toBe(50);
  expect(await gauge()).toBe(0.05);
});

it('keeps the last answer when the registry cannot be read', async () => {
  const hs = createHeadStart({ redis: t.redis, prefix: PREFIX, configuredMs: 50, log });
  await hs.refresh();
  await workerProcess(false);
  await t.redis.set(workersKey(PREFIX), 'not a sorted set'); // every read now fails (WRONGTYPE)
  await hs.refresh();
  expect(hs.current()).toBe(50);
});

it('is none when no head start is configured, whatever is registered', async () => {
  await workerProcess(false);
  const hs = createHeadStart({ redis: t.redis, prefix: PREFIX, configuredMs: 0, log });
  await hs.refresh();
  expect(hs.current()).toBe(0);
});

it('allows batches of occurrences with no worker registered and while every registered one runs them, not while one does not', async () => {
  const hs = createHeadStart({ redis: t.redis, prefix: PREFIX, configuredMs: 50, log, readBatches: true });
  expect(hs.batches()).toBe(false); // nothing read yet
  await hs.refresh();
  expect(hs.batches()).toBe(true);
  await workerProcess(true);
  await hs.refresh();
  expect(hs.batches()).toBe(true);
  // A worker of the tickwork before batches: it holds early occurrences, but would fail a batch as an unknown job.
  const earlier = await workerProcess(true, false);
  await hs.refresh();
  expect(hs.batches()).toBe(false);
  expect(hs.current()).toBe(50);
  await earlier.stop(true);
  await hs.refresh();
  expect(hs.batches()).toBe(true);
});

it('reads batches even with no head start configured', async () => {
  await workerProcess(false, false);
  const hs = createHeadStart({ redis: t.redis, prefix: PREFIX, configuredMs: 0, log, readBatches: true });
  await hs.refresh();
  expect(hs.batches()).toBe(false);
  expect(hs.current()).toBe(0);
});
