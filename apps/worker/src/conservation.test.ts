import { fileURLToPath } from 'node:url';
import { createLogger, IdempotencyLedger, listDeadLetters, QueueSet } from '@tickwork/runtime';
import { freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CONSERVATION_QUEUE as Q } from './testing/conservation-jobs.js';

vi.setConfig({ testTimeout: 180_000, hookTimeout: 60_000 });

const WORKER = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const JOBS = fileURLToPath(new URL('../dist/testing/conservation-jobs.js', import.meta.url));
const TOTAL = 1000;

/** i mod 10: 0-4 good, 5-6 flaky, 7 poison, 8 invalid payload (older producer), 9 unknown job name. */
function kindOf(i: number): 'good' | 'flaky' | 'poison' | 'invalid' | 'unknown' {
  const m = i % 10;
  return m < 5 ? 'good' : m < 7 ? 'flaky' : m === 7 ? 'poison' : m === 8 ? 'invalid' : 'unknown';
}

let redisServer: RedisServerHandle;
let queues: QueueSet;
const workers: AppProcess[] = [];

async function startWorker(): Promise<AppProcess> {
  const app = startApp(WORKER, {
    REDIS_URL: redisServer.url,
    QUEUE_PREFIX: 'tw',
    PORT: String(await freePort()),
    JOBS_MODULE: JOBS,
    LOG_LEVEL: 'warn',
    WORKER_CONCURRENCY: '8',
    WORKER_LOCK_DURATION_MS: '2000',
    WORKER_STALLED_INTERVAL_MS: '1000',
    DLQ_SWEEP_INTERVAL_MS: '1000',
  });
  workers.push(app);
  return app;
}

beforeAll(async () => {
  redisServer = await startRedisServer();
  queues = new QueueSet(redisServer.client(), 'tw', createLogger('test', 'silent'));
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  await queues?.close();
  await redisServer?.stop();
});

describe('conservation: nothing is lost, nothing is in two places', () => {
  it(`${TOTAL} mixed jobs across 3 worker processes, one killed -9 midway: each completed or dead-lettered, exactly once`, async () => {
    const queue = queues.get(Q);
    const jobs = Array.from({ length: TOTAL }, (_, i) => {
      const kind = kindOf(i);
      const name = kind === 'invalid' ? 'c.good' : kind === 'unknown' ? 'c.retired' : `c.${kind}`;
      const data = kind === 'invalid' ? { i: `not a number ${i}` } : { i };
      const attempts = kind === 'poison' ? 2 : 3;
      // Completed jobs are kept so the test can count them (production trims them; the ledger remembers).
      return { name, data, opts: { jobId: `c-${i}`, attempts, backoff: { type: 'fixed', delay: 10 }, removeOnComplete: false } };
    });
    for (let i = 0; i < jobs.length; i += 250) await queue.addBulk(jobs.slice(i, i + 250));

    const [victim] = await Promise.all([startWorker(), startWorker(), startWorker()]);
    // Kill one process hard once work is under way: its active jobs stall and are redelivered; a final
    // failure it had not yet moved is picked up by the others' sweep.
    await waitFor(async () => (await queue.getCompletedCount()) >= 150, { timeoutMs: 60_000, what: '150 completed' });
    await victim?.stop('SIGKILL');

    const settled = async () => {
      const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed', 'completed');
      const dlq = (await listDeadLetters(queues, Q)).length;
      const n = (state: string) => counts[state] ?? 0;
      const idle = n('waiting') + n('active') + n('delayed') + n('prioritized') + n('failed') === 0;
      return idle && n('completed') + dlq >= TOTAL ? { counts, dlq } : undefined;
    };
    await waitFor(settled, { timeoutMs: 150_000, intervalMs: 250, what: 'every job completed or dead-lettered' });

    const completed = new Set((await queue.getCompleted(0, -1)).map((j) => String(j.id)));
    const dead = (await listDeadLetters(queues, Q)).map((d) => d.entry.originalJobId);
    const deadSet = new Set(dead);
    expect(dead.length).toBe(deadSet.size); // no job dead-lettered twice
    const both = [...completed].filter((id) => deadSet.has(id));
    const missing = jobs.map((j) => j.opts.jobId).filter((id) => !completed.has(id) && !deadSet.has(id));
    expect(both).toEqual([]);
    expect(missing).toEqual([]);
    expect(completed.size + deadSet.size).toBe(TOTAL);

    // And each landed where its kind says.
    for (let i = 0; i < TOTAL; i++) {
      const kind = kindOf(i);
      const shouldComplete = kind === 'good' || kind === 'flaky';
      expect([`c-${i}`, shouldComplete ? completed.has(`c-${i}`) : deadSet.has(`c-${i}`)]).toEqual([`c-${i}`, true]);
    }
    // The worker writes each result to the ledger ahead of BullMQ's acknowledgement, on the same connection,
    // without waiting for the reply: even across the kill, no job was acknowledged without its run recorded.
    const ledger = new IdempotencyLedger(redisServer.client(), { prefix: 'tw' });
    const notRecorded: string[] = [];
    for (const id of completed) {
      const i = Number(id.slice(2));
      if ((await ledger.inspect(`c.${kindOf(i)}#${id}`))?.state !== 'done') notRecorded.push(id);
    }
    expect(notRecorded).toEqual([]);

    const reasons = new Map((await listDeadLetters(queues, Q)).map((d) => [d.entry.originalJobId, d.entry.failureReason]));
    expect(reasons.get('c-7')).toBe('poison 7');
    expect(reasons.get('c-8')).toMatch(/^invalid payload: i: /);
    expect(reasons.get('c-9')).toBe('unknown job');
  });
});
