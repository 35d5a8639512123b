/**
 * completionArgs (completion-args.ts) makes what BullMQ's moveToCompletedArgs makes, its options left
 * unpacked. What a user relies on: an acknowledgement sent from it does what BullMQ's own does, for every
 * option a job or a worker can set. This holds it to the installed BullMQ, word by word, so a release that
 * adds or changes an option fails here rather than in production.
 */
import { AckOptions } from '../ack/ack-options.js';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import { Queue, Worker, type JobsOptions, type WorkerOptions } from 'bullmq';
import { unpack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completionArgs, type CompletionBackend, type CompletionWorker } from './completion-args.js';

let server: RedisServerHandle;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server.stop();
});

const OPTIONS = 14 + 7;
const TIMESTAMP = 14 + 1;

/** Nulls left out at any depth, as cmsgpack leaves nils out of a Lua table. */
const noNulls = (v: unknown): unknown =>
  v === null || typeof v !== 'object' ? v : Object.fromEntries(Object.entries(v).filter(([, x]) => x != null).map(([k, x]) => [k, noNulls(x)]));

const jobOptions: JobsOptions[] = [
  {},
  { removeOnComplete: true },
  { removeOnComplete: false },
  { removeOnComplete: 7 },
  { removeOnComplete: { age: 3600, count: 10 } },
  { attempts: 3, failParentOnFailure: true },
  { continueParentOnFailure: true },
  { ignoreDependencyOnFailure: true },
  { removeDependencyOnFailure: true },
];
const workerOptions: Partial<WorkerOptions>[] = [{}, { name: 'w1', limiter: { max: 10, duration: 1000 }, metrics: { maxDataPoints: 20 }, removeOnComplete: { count: 5 }, lockDuration: 12_000 }];

describe('completionArgs', () => {
  it("makes BullMQ's moveToCompletedArgs, its options unpacked, for every job and worker option", async () => {
    const queue = new Queue('ca', { connection: server.client(), prefix: 'tw' });
    const jobs = await queue.addBulk(jobOptions.map((opts, i) => ({ name: 'j', data: { i }, opts })));
    for (const wopts of workerOptions) {
      const worker = new Worker('ca', null, { connection: server.client(), prefix: 'tw', autorun: false, ...wopts });
      const backend = worker.getBackend() as unknown as CompletionBackend & { moveToCompletedArgs(...args: unknown[]): unknown[] };
      for (const job of jobs) {
        for (const [value, fetchNext] of [['{"a":1}', true], [undefined, false]] as const) {
          const bull = backend.moveToCompletedArgs(job, value, job.opts.removeOnComplete, 'tok:1', fetchNext);
          const ours = completionArgs(backend, worker as unknown as CompletionWorker, job, value, 'tok:1', fetchNext);
          expect(ours[OPTIONS]).toBeInstanceOf(AckOptions);
          const options = ours[OPTIONS] as AckOptions;
          expect(options.value).toEqual(noNulls(unpack(bull[OPTIONS] as Buffer)));
          // Packed for BullMQ's own script, they read back as BullMQ's did.
          expect(noNulls(unpack(options.packed()))).toEqual(noNulls(unpack(bull[OPTIONS] as Buffer)));
          // The token alone is the job's: the rest is what the fold's call carries once for every job of its kind.
          expect(options.token).toBe('tok:1');
          expect({ token: 'tok:1', ...JSON.parse(options.shared.json()) }).toEqual(options.value);
          expect(options.shared).toBe((completionArgs(backend, worker as unknown as CompletionWorker, job, value, 'tok:2', fetchNext)[OPTIONS] as AckOptions).shared);
          const rest = (a: unknown[]) => a.filter((_, i) => i !== OPTIONS && i !== TIMESTAMP);
          expect(rest(ours)).toEqual(rest(bull));
          expect(Math.abs(Number(ours[TIMESTAMP]) - Number(bull[TIMESTAMP]))).toBeLessThan(1000);
        }
      }
      await worker.close();
    }
    await queue.close();
  });
});
