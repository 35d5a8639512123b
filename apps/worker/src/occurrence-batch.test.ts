/**
 * Batches of occurrences (pipeline/occurrence-batch.ts), in an in-process worker pool on a private Redis:
 * each occurrence of a batch runs once as its own run under the job id it would have had alone, with its
 * own history record; a failed one is retried as a job of its own or, failed for good, reaches the DLQ
 * under its own id with its reason; a lone batch runs as many occurrences at once as the worker's
 * concurrency; a batch an operator cancels ends its occurrences cancelled; a batch
 * that cannot be read fails with the reason and nothing else stops. Crashes: occurrence-batch-crash.test.ts.
 */
import { listDeadLetters, requestCancel, type DeadLetter } from '@tickwork/operations';
import { OCCURRENCE_BATCH_JOB, type BatchedOccurrence } from '@tickwork/core';
import { readHistory } from '@tickwork/schedules';
import { waitFor } from '@tickwork/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BATCH_FX, catalog, fxBatched } from './testing/occurrence-batch-fixtures.js';
import { startPoolFixture, type PoolFixture } from './testing/pool-fixture.js';

let fx: PoolFixture;
const Q = fxBatched.queue;

beforeAll(async () => {
  fx = await startPoolFixture(catalog, [Q]);
});
afterAll(async () => {
  await fx.stop();
});

let seq = 0;
/** An occurrence of a runtime schedule of its own (`rt-<n>`), due now, with its payload. */
function occurrence(data: Record<string, unknown> = {}): BatchedOccurrence {
  const n = ++seq;
  return { id: `rt-${n}@now-${n}`, run: { schedule: `rt-${n}`, nominal: Date.now(), catchUp: false }, data };
}

async function addBatch(id: string, runs: BatchedOccurrence[]) {
  return fx.queues.get(Q).add(OCCURRENCE_BATCH_JOB, { job: fxBatched.name, runs }, { jobId: id, attempts: 10 });
}

const effects = async () => fx.redis.hgetall(BATCH_FX.effects);
const starts = async () => fx.redis.lrange(BATCH_FX.starts, 0, -1);
const outcomeOf = async (o: BatchedOccurrence) => (await readHistory(fx.redis, 'tw', o.run.schedule, 5))[0];
const deadLetter = (jobId: string) =>
  waitFor(async () => (await listDeadLetters(fx.queues, Q)).find((d: DeadLetter) => d.entry.originalJobId === jobId), { timeoutMs: 20_000, what: `the dead letter of ${jobId}` });

it("runs each occurrence of a batch once, as its own run under its own job id, and completes the batch's job", async () => {
  const runs = [occurrence(), occurrence(), occurrence(), occurrence()];
  const job = await addBatch('batch-ok', runs);
  await waitFor(async () => (await job.getState()) === 'completed', { timeoutMs: 20_000, what: 'the batch completed' });
  const done = await fx.queues.get(Q).getJob('batch-ok');
  expect(done?.returnvalue).toEqual({ ran: 4, handedOn: 0 });
  const counted = await effects();
  for (const o of runs) {
    expect(counted[o.id], o.id).toBe('1');
    // The history names the batch's job, the one to find in Bull Board; no BullMQ job of its own was made.
    expect(await outcomeOf(o)).toMatchObject({ jobId: 'batch-ok', outcome: 'completed', attempts: 1 });
    expect(await fx.queues.get(Q).getJob(o.id)).toBeUndefined();
  }
});

it("a lone batch runs as many of its occurrences at once as the worker's concurrency, no more", async () => {
  // The pool's concurrency is 2: four occurrences that sleep run two at a time.
  const runs = [occurrence({ sleepMs: 300 }), occurrence({ sleepMs: 300 }), occurrence({ sleepMs: 300 }), occurrence({ sleepMs: 300 })];
  const job = await addBatch('batch-parallel', runs);
  await waitFor(async () => (await job.getState()) === 'completed', { timeoutMs: 20_000, what: 'the batch completed' });
  const spans = await Promise.all(runs.map(async (o) => (await outcomeOf(o)) as { startedAt: string; endedAt: string }));
  const at = (iso: string) => Date.parse(iso);
  // How many ran at each start (itself included): two at a time, never more.
  const atOnce = spans.map((s) => spans.filter((o) => at(o.startedAt) <= at(s.startedAt) && at(o.endedAt) > at(s.startedAt)).length);
  expect(Math.max(...atOnce), String(atOnce)).toBe(2);
});

it('hands a failed occurrence on as a job of its own: retried under its id, or dead-lettered with its reason; the rest of the batch runs', async () => {
  const ok1 = occurrence();
  const once = occurrence({ fail: 'once' });
  const always = occurrence({ fail: 'always' });
  const refused = occurrence({ fail: 'unrecoverable' });
  const ok2 = occurrence();
  const job = await addBatch('batch-failures', [ok1, once, always, refused, ok2]);
  await waitFor(async () => (await job.getState()) === 'completed', { timeoutMs: 20_000, what: 'the batch completed' });
  expect((await fx.queues.get(Q).getJob('batch-failures'))?.returnvalue).toEqual({ ran: 2, handedOn: 3 });

  // Failed once: its second attempt ran as a job of its own, under the occurrence's id, and its effect once.
  await waitFor(async () => (await effects())[once.id] === '1', { timeoutMs: 20_000, what: 'the retried occurrence ran' });
  const retried = await fx.queues.get(Q).getJob(once.id);
  expect(retried?.name).toBe(fxBatched.name);
  await waitFor(async () => (await outcomeOf(once))?.outcome === 'completed', { what: 'its history completed' });
  // The record names the job that ran its last attempt: its own.
  expect(await outcomeOf(once)).toMatchObject({ jobId: once.id, attempts: 2 });

  // Failed on both of its attempts, and refused for good on its first: dead letters under their own ids.
  const a = await deadLetter(always.id);
  expect(a.entry.failureReason).toBe('failed attempt 2');
  expect(a.entry.scheduleId).toBe(always.run.schedule);
  const r = await deadLetter(refused.id);
  expect(r.entry.failureReason).toBe('refused for good');
  expect(await outcomeOf(always)).toMatchObject({ outcome: 'failed', error: 'failed attempt 2' });
  expect(await outcomeOf(refused)).toMatchObject({ outcome: 'failed', error: 'refused for good' });

  const started = await starts();
  expect(started.filter((s) => s.startsWith(`${always.id} `))).toEqual([`${always.id} 1`, `${always.id} 2`]);
  expect(started.filter((s) => s.startsWith(`${refused.id} `))).toEqual([`${refused.id} 1`]);
  const counted = await effects();
  for (const o of [ok1, ok2]) expect(counted[o.id]).toBe('1');
  expect(counted[always.id]).toBeUndefined();
});

it('a batch an operator cancels before it starts ends each of its occurrences cancelled, none run', async () => {
  const runs = [occurrence(), occurrence()];
  // Delayed, so the cancel request is there before a worker takes it.
  const job = await fx.queues.get(Q).add(OCCURRENCE_BATCH_JOB, { job: fxBatched.name, runs }, { jobId: 'batch-cancelled', delay: 1500 });
  await requestCancel({ queues: fx.queues, queue: Q, jobId: 'batch-cancelled', by: 'test' });
  await waitFor(async () => (await job.getState()) === 'completed', { timeoutMs: 20_000, what: 'the batch completed' });
  for (const o of runs) {
    await waitFor(async () => (await outcomeOf(o))?.outcome === 'cancelled', { what: `${o.id} recorded cancelled` });
    expect((await effects())[o.id]).toBeUndefined();
  }
  // Cancelled runs are not dead letters.
  expect((await listDeadLetters(fx.queues, Q)).filter((d) => runs.some((o) => o.id === d.entry.originalJobId))).toEqual([]);
});

it('a batch that cannot be read fails with each bad field named, and the next batch runs', async () => {
  const bad = await fx.queues.get(Q).add(OCCURRENCE_BATCH_JOB, { job: fxBatched.name, runs: [{ id: 'x', run: { schedule: '', nominal: 'soon' } }] }, { jobId: 'batch-bad' });
  const next = occurrence();
  const good = await addBatch('batch-after-bad', [next, occurrence()]);
  await waitFor(async () => (await good.getState()) === 'completed', { timeoutMs: 20_000, what: 'the next batch completed' });
  const d = await deadLetter(String(bad.id));
  expect(d.entry.failureReason).toMatch(/occurrence batch.*runs\.0\.run\.(schedule|nominal)/s);
  expect((await effects())[next.id]).toBe('1');
});
