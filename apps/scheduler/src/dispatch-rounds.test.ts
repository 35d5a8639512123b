/**
 * A tick of many claim rounds (a herd: more due schedules than one round claims). Each round's claim and
 * plan overlap the previous round's adds and commit (the dispatcher's `rounds`); what a user relies on is
 * that every occurrence is still added and recorded once, and that a round whose adds fail fails the tick
 * and loses nothing: its claims are re-planned once their lease runs out, and the rounds after it are
 * claimed by the next tick.
 */
import { createCatalog, createLogger, defineJob, QueueSet } from '@tickwork/core';
import { createDispatcher, createSchedules, dueBacklog, readHistory, SCHEDULE_SHARDS } from '@tickwork/schedules';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { useRedisPerFile } from './testing/redis-per-file.js';

const t = useRedisPerFile();
const log = createLogger('test', 'silent');
const MIN = 60_000;
const T0 = Date.parse('2026-05-01T00:00:00Z');
const N = 200;
/** Two entries per shard per round: 32 a round, so the herd of N takes 7 full rounds and one that is not. */
const BATCH = 2;
const LEASE_MS = 5_000;

let n = 0;
async function herd() {
  const prefix = `rounds${++n}`;
  const queues = new QueueSet(t.redis, prefix, log);
  t.queueSets.push(queues);
  const catalog = createCatalog([defineJob({ name: 'ping', queue: 'q', schema: z.object({ i: z.number() }), handler: async () => undefined })]);
  const store = createSchedules({ redis: t.redis, queues, catalog, log, now: () => T0 });
  for (let i = 0; i < N; i++) await store.upsert(`user:${i}`, { job: 'ping', pattern: '* * * * *', tz: 'UTC', data: { i } });
  const dispatcher = () => createDispatcher({ redis: t.redis, queues, catalog, log, graceMs: 10 * MIN, lookaheadMs: 0, leaseMs: LEASE_MS, batch: BATCH });
  const queued = () => queues.get('q').getJobCountByTypes('wait', 'delayed');
  /** Due entries at or before `at`, over every shard (the scheduler's backlog gauge). */
  const dueBy = async (at: number) => (await dueBacklog(t.redis, prefix, at)).backlog;
  return { prefix, queues, dispatcher, queued, dueBy };
}

it('adds and records every occurrence of a herd once, over many overlapping rounds of one tick', async () => {
  const h = await herd();
  const result = await h.dispatcher().tick(T0 + MIN + 1000);
  expect(result).toMatchObject({ claimed: N, enqueued: N, committed: N });
  expect(result.rounds).toBeGreaterThanOrEqual(Math.ceil(N / (BATCH * SCHEDULE_SHARDS)));
  expect(await h.queued()).toBe(N);
  expect(await h.dueBy(T0 + MIN)).toBe(0); // every due entry moved on to the next minute
  for (const i of [0, 99, 199]) expect((await readHistory(t.redis, h.prefix, `user:${i}`))[0]?.enqueuedAt).toBeDefined();
});

it('fails the tick when a round cannot add its occurrences, and a later tick adds every one once', async () => {
  const h = await herd();
  // BullMQ's add counts job ids with INCR on the queue's id key first: a key that is not a number makes
  // every add fail before it writes anything.
  const idKey = `${h.prefix}:q:id`;
  await t.redis.set(idKey, 'not a number');
  const now = T0 + MIN + 1000;
  await expect(h.dispatcher().tick(now)).rejects.toThrow(/not an integer/);
  expect(await h.queued()).toBe(0);

  await t.redis.del(idKey);
  // The failed rounds' claims are held until their lease runs out; the rest are due and claimed at once.
  const before = await h.dispatcher().tick(now + 1000);
  expect(before.claimed).toBeLessThan(N);
  const after = await h.dispatcher().tick(now + LEASE_MS + 1000);
  expect(before.enqueued + after.enqueued).toBe(N);
  expect(await h.queued()).toBe(N);
  expect(await h.dueBy(T0 + MIN)).toBe(0);
});
