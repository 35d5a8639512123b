/**
 * Jobs whose stored data or options are not JSON (another producer wrote them, or a hand: `HSET <prefix>:<queue>:<id>
 * data '{not json'`) used to be delivered again every few seconds forever, their stall count climbing, and
 * never reached the DLQ. Against a real worker process on each of the engine's paths, corrupt jobs written
 * beside good ones, on an ordinary queue and on a batch job's queue, end in the DLQ as raw entries with their
 * reason and their stored strings, each failed once, while every good job completes.
 */
import { fileURLToPath } from 'node:url';
import { listDeadLetters, type DeadLetter } from '@tickwork/operations';
import { waitFor } from '@tickwork/testkit';
import { describe, expect, it, vi } from 'vitest';
import { BT_KEYS } from './testing/batch-fixtures.js';
import { useWorkerProcesses } from './testing/worker-processes.js';

vi.setConfig({ testTimeout: 240_000 });

const JOBS_MODULE = fileURLToPath(new URL('../dist/testing/batch-fixtures.js', import.meta.url));
const wp = useWorkerProcesses({
  jobsModule: JOBS_MODULE,
  // A lock left behind by a delivery BullMQ could not decode (BullMQ's public paths) expires sooner, so its
  // job leaves the failed set for the DLQ sooner; the sweep that moves it then runs every second.
  env: { WORKER_QUEUES: 'bt,bt-plain', WORKER_LOCK_DURATION_MS: '5000', DLQ_SWEEP_INTERVAL_MS: '1000' },
});

const CORRUPT = [
  { id: 'bad-data', field: 'data', stored: '{not json', reason: /^job data is not JSON: / },
  { id: 'bad-opts', field: 'opts', stored: 'xx', reason: /^job options are not JSON: / },
] as const;

const PLAIN_GOOD = 30;
const BATCH_GOOD = 20;

/** `queue`'s DLQ entry for origin job `jobId`, once there. */
const entryOf = (queue: string, jobId: string): Promise<DeadLetter> =>
  waitFor(async () => (await listDeadLetters(wp.queues, queue)).find((d) => d.entry.originalJobId === jobId), { timeoutMs: 60_000, what: `DLQ entry for ${queue}/${jobId}` });

/** Adds good jobs with a corrupt one after every `every`-th, each corrupted in Redis right after it is added (no worker runs yet). */
async function fill(queue: string, name: string, good: number, data: (i: number) => object, prefix: string): Promise<string[]> {
  const q = wp.queues.get(queue);
  const corrupt: string[] = [];
  for (let i = 0; i < good; i++) {
    await q.add(name, data(i), { jobId: `${prefix}good-${i}`, attempts: 3 });
    const c = i === Math.floor(good / 3) ? CORRUPT[0] : i === Math.floor((2 * good) / 3) ? CORRUPT[1] : undefined;
    if (!c) continue;
    const id = `${prefix}${c.id}`;
    await q.add(name, data(1000), { jobId: id, attempts: 3 });
    await wp.redis.hset(q.toKey(id), c.field, c.stored);
    corrupt.push(id);
  }
  return corrupt;
}

describe.each([
  ['fast', 'auto'],
  ["BullMQ's public", 'off'],
])('on the %s path', (_path, fastPath) => {
  it("corrupt jobs end in the DLQ as raw entries with their reason, once each; every good job beside them completes", async () => {
    const plainCorrupt = await fill('bt-plain', 'bt.plain', PLAIN_GOOD, () => ({}), 'p-');
    const batchCorrupt = await fill('bt', 'bt.sum', BATCH_GOOD, (i) => ({ n: i }), 'b-');
    const worker = await wp.start({ WORKER_BULLMQ_FAST_PATH: fastPath });

    for (const [queue, ids] of [['bt-plain', plainCorrupt], ['bt', batchCorrupt]] as const) {
      for (const id of ids) {
        const c = CORRUPT.find((k) => id.endsWith(k.id));
        const { entry } = await entryOf(queue, id);
        expect(entry.failureReason, id).toMatch(c?.reason ?? /never/);
        expect(entry.unparsedReason, id).toMatch(/^tickwork could not read this job: /);
        expect(entry.attemptsMade, id).toBe(1);
        if (c?.field === 'data') {
          // The stored string itself, for an operator to read, fix and re-drive (or purge).
          expect(entry.payload, id).toBe('{not json');
          expect(entry.originalOptions, id).toMatchObject({ attempts: 3 });
        } else {
          expect(entry.payload, id).toEqual(queue === 'bt' ? { n: 1000 } : {});
          expect(entry.originalOptions, id).toEqual({ unparsed: 'xx' });
        }
      }
    }

    const plain = wp.queues.get('bt-plain');
    await waitFor(async () => (await plain.getJobCounts('completed')).completed === PLAIN_GOOD, { timeoutMs: 60_000, what: 'every good plain job completed' });
    await waitFor(async () => (await wp.redis.scard(BT_KEYS.done)) === BATCH_GOOD, { timeoutMs: 60_000, what: 'every good batch job committed' });

    // Nothing left to deliver again: each corrupt job left its queue for the DLQ, failed once.
    for (const [queue, ids] of [['bt-plain', plainCorrupt], ['bt', batchCorrupt]] as const) {
      for (const id of ids) {
        await waitFor(async () => (await wp.queues.get(queue).getJobState(id)) === 'unknown', { timeoutMs: 60_000, what: `${queue}/${id} gone from its queue` });
      }
    }
    const failedOnce = worker.logs().filter((l) => l.queue === 'bt-plain' && typeof l.msg === 'string' && l.msg.startsWith('job cannot be read'));
    expect(failedOnce.map((l) => l.jobId).sort()).toEqual([...plainCorrupt].sort());
    expect(await plain.getJobCounts('wait', 'active', 'delayed', 'failed')).toEqual({ wait: 0, active: 0, delayed: 0, failed: 0 });
    expect(await wp.queues.get('bt').getJobCounts('wait', 'active', 'delayed', 'failed')).toEqual({ wait: 0, active: 0, delayed: 0, failed: 0 });
  });
});
