/**
 * The conservation property, shared by the crash tests: every job of a mixed batch ends either completed
 * or dead-lettered, exactly once, where its kind says, and every completed job's run is recorded done in
 * the idempotency ledger.
 */
import { IdempotencyLedger } from '@tickwork/exactly-once';
import { listDeadLetters } from '@tickwork/operations';
import type { QueueSet, RedisClient } from '@tickwork/core';
import { join } from 'node:path';
import { appEntry, freePort, redisEnvOf, REPO_ROOT, startApp, waitFor, type AppProcess, type RedisClusterHandle } from '@tickwork/testkit';
import { expect } from 'vitest';
import { CONSERVATION_QUEUE as Q } from './conservation-jobs.js';

const JOBS_MODULE = join(REPO_ROOT, 'apps', 'worker', 'dist', 'testing', 'conservation-jobs.js');

/** The queue prefix the crash tests run under. */
export const CONSERVATION_PREFIX = 'tw';

/**
 * A real worker process on the conservation catalog: short locks and stall checks and a fast DLQ sweep,
 * so a crash's stalled jobs and interrupted moves are recovered within seconds.
 */
export async function startConservationWorker(redis: string | Pick<RedisClusterHandle, 'env'>, concurrency: number): Promise<AppProcess> {
  return startApp(appEntry('worker'), {
    ...redisEnvOf(redis),
    QUEUE_PREFIX: CONSERVATION_PREFIX,
    PORT: String(await freePort()),
    JOBS_MODULE,
    LOG_LEVEL: 'warn',
    WORKER_CONCURRENCY: String(concurrency),
    WORKER_LOCK_DURATION_MS: '2000',
    WORKER_STALLED_INTERVAL_MS: '1000',
    DLQ_SWEEP_INTERVAL_MS: '1000',
  });
}

export type Kind = 'good' | 'flaky' | 'poison' | 'invalid' | 'unknown';

/** i mod 10: 0-4 good, 5-6 flaky, 7 poison, 8 invalid payload (older producer), 9 unknown job name. */
export function kindOf(i: number): Kind {
  const m = i % 10;
  return m < 5 ? 'good' : m < 7 ? 'flaky' : m === 7 ? 'poison' : m === 8 ? 'invalid' : 'unknown';
}

/** Enqueues `total` jobs of the mix with ids `c-<i>`. Completed jobs are kept so they can be counted. */
export async function enqueueMix(queues: QueueSet, total: number): Promise<void> {
  const jobs = Array.from({ length: total }, (_, i) => {
    const kind = kindOf(i);
    const name = kind === 'invalid' ? 'c.good' : kind === 'unknown' ? 'c.retired' : `c.${kind}`;
    const data = kind === 'invalid' ? { i: `not a number ${i}` } : { i };
    const attempts = kind === 'poison' ? 2 : 3;
    return { name, data, opts: { jobId: `c-${i}`, attempts, backoff: { type: 'fixed', delay: 10 }, removeOnComplete: false } };
  });
  for (let i = 0; i < jobs.length; i += 250) await queues.get(Q).addBulk(jobs.slice(i, i + 250));
}

export async function waitUntilSettled(queues: QueueSet, total: number, timeoutMs: number): Promise<void> {
  const queue = queues.get(Q);
  await waitFor(
    async () => {
      const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed', 'completed');
      const n = (state: string) => counts[state] ?? 0;
      const idle = n('waiting') + n('active') + n('delayed') + n('prioritized') + n('failed') === 0;
      return idle && n('completed') + (await listDeadLetters(queues, Q)).length >= total ? true : undefined;
    },
    { timeoutMs, intervalMs: 250, what: 'every job completed or dead-lettered' },
  );
}

export async function expectConserved(queues: QueueSet, redis: RedisClient, total: number): Promise<void> {
  const completed = new Set((await queues.get(Q).getCompleted(0, -1)).map((j) => String(j.id)));
  const dead = (await listDeadLetters(queues, Q)).map((d) => d.entry.originalJobId);
  const deadSet = new Set(dead);
  expect(dead.length).toBe(deadSet.size); // no job dead-lettered twice
  const ids = Array.from({ length: total }, (_, i) => `c-${i}`);
  expect([...completed].filter((id) => deadSet.has(id))).toEqual([]);
  expect(ids.filter((id) => !completed.has(id) && !deadSet.has(id))).toEqual([]);
  expect(completed.size + deadSet.size).toBe(total);
  for (let i = 0; i < total; i++) {
    const kind = kindOf(i);
    const shouldComplete = kind === 'good' || kind === 'flaky';
    expect([`c-${i}`, shouldComplete ? completed.has(`c-${i}`) : deadSet.has(`c-${i}`)]).toEqual([`c-${i}`, true]);
  }
  // The worker writes each result to the ledger ahead of BullMQ's acknowledgement, on the same connection,
  // without waiting for the reply: even across a crash, no job was acknowledged without its run recorded.
  const ledger = new IdempotencyLedger(redis, { prefix: CONSERVATION_PREFIX });
  const notRecorded: string[] = [];
  for (const id of completed) {
    if ((await ledger.inspect(`c.${kindOf(Number(id.slice(2)))}#${id}`, { kind: 'key', queue: Q }))?.state !== 'done') notRecorded.push(id);
  }
  expect(notRecorded).toEqual([]);
}
