/**
 * TickworkWorker's short completion path (tickwork-worker.ts): a job completed by it looks, to everything
 * outside the worker, as one completed by a plain BullMQ Worker. What a user relies on: the same events with
 * the same jobs (`active` for each job, `completed` with its result), the same job fields (returnvalue,
 * finishedOn, attemptsMade) in memory and in Redis, removeOnComplete honoured, a result JSON cannot encode
 * failing its attempt, and a BullMQ job scheduler's jobs still repeating. And that the short path is taken:
 * a BullMQ whose internals moved would silently put every job back on the long one.
 */
import { startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import { Job, Queue, Worker, type Processor, type WorkerOptions } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TickworkWorker } from './tickwork-worker.js';

let server: RedisServerHandle;
let queueNo = 0;

beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server.stop();
});

type WorkerClass = new (name: string, processor: Processor, opts: WorkerOptions) => Worker;

interface Seen {
  active: string[];
  completed: { id: string; result: unknown; returnvalue: unknown; attemptsMade: number; finishedOn: number | undefined }[];
  failed: { id: string; message: string }[];
  /** The worker's `error` events (BullMQ reports a completion that threw there, then fails the attempt). */
  errors: string[];
  /** Job.prototype.moveToCompleted calls (BullMQ's long path) while the worker ran. */
  longPath: number;
  /** Worker.prototype.processJob calls (BullMQ's own, inside its telemetry wrapper) while the worker ran. */
  bullProcessJob: number;
}

/** Runs `jobs` through a worker of `cls` until each has completed or failed; what its events said. */
async function run(cls: WorkerClass, jobs: { name: string; data: unknown; opts?: { removeOnComplete?: boolean } }[], processor: Processor, concurrency = 4): Promise<{ seen: Seen; queue: Queue; ids: string[] }> {
  const name = `tw-${queueNo++}`;
  const queue = new Queue(name, { connection: server.client(), prefix: 'tw' });
  const added = await queue.addBulk(jobs);
  const seen: Seen = { active: [], completed: [], failed: [], errors: [], longPath: 0, bullProcessJob: 0 };
  const long = Job.prototype.moveToCompleted;
  Job.prototype.moveToCompleted = function (this: Job, ...args: Parameters<Job['moveToCompleted']>) {
    seen.longPath++;
    return long.apply(this, args);
  };
  const bullProcessJob = Worker.prototype.processJob;
  Worker.prototype.processJob = function (this: Worker, ...args: Parameters<Worker['processJob']>) {
    seen.bullProcessJob++;
    return bullProcessJob.apply(this, args);
  };
  const worker = new cls(name, processor, { connection: server.client(), prefix: 'tw', concurrency });
  worker.on('active', (job) => seen.active.push(String(job.id)));
  worker.on('completed', (job, result) => seen.completed.push({ id: String(job.id), result, returnvalue: job.returnvalue, attemptsMade: job.attemptsMade, finishedOn: job.finishedOn }));
  worker.on('failed', (job, err) => seen.failed.push({ id: String(job?.id), message: err.message }));
  worker.on('error', (err) => seen.errors.push(err.message));
  try {
    await waitFor(async () => seen.completed.length + seen.failed.length === jobs.length, { timeoutMs: 15_000, what: `${jobs.length} jobs ended` });
  } finally {
    await worker.close();
    Job.prototype.moveToCompleted = long;
    Worker.prototype.processJob = bullProcessJob;
  }
  return { seen, queue, ids: added.map((j) => String(j.id)) };
}

/** Returns `data.result` where the job has one (null included), else an object echoing its data. */
const results: Processor = async (job) => ('result' in (job.data as object) ? (job.data as { result: unknown }).result : { echoed: job.data });

describe('TickworkWorker completing jobs', () => {
  it('emits the events and writes the job fields a plain Worker does, on its short path', async () => {
    const jobs = Array.from({ length: 12 }, (_, i) => ({ name: 'j', data: { i, ...(i % 3 === 0 && { result: null }) } }));
    const plain = await run(Worker, jobs, results);
    const ours = await run(TickworkWorker as unknown as WorkerClass, jobs, results);
    // Events, in memory: every job active once, completed once with its result and the fields set.
    const shape = (r: typeof plain) => ({
      active: [...r.seen.active].sort(),
      completed: r.seen.completed
        .map((c) => ({ id: c.id, result: c.result, returnvalue: c.returnvalue, attemptsMade: c.attemptsMade, finished: typeof c.finishedOn === 'number' }))
        .sort((a, b) => a.id.localeCompare(b.id)),
      failed: r.seen.failed,
    });
    expect(shape(ours)).toEqual(shape(plain));
    expect(ours.seen.completed).toHaveLength(12);
    // In Redis: the same state, return value, attempts and a finishedOn equal to the one the event's job held.
    const stored = async (r: typeof plain) =>
      Promise.all(
        r.ids.map(async (id) => {
          const job = await Job.fromId(r.queue, id);
          const seen = r.seen.completed.find((c) => c.id === id);
          return { id, state: await job?.getState(), returnvalue: job?.returnvalue, attemptsMade: job?.attemptsMade, finishedOnMatches: job?.finishedOn === seen?.finishedOn };
        }),
      );
    expect(await stored(ours)).toEqual(await stored(plain));
    // The short path was taken by TickworkWorker, the long one by the plain Worker.
    expect({ ours: ours.seen.longPath, plain: plain.seen.longPath }).toEqual({ ours: 0, plain: 12 });
    expect({ ours: ours.seen.bullProcessJob, plain: plain.seen.bullProcessJob }).toEqual({ ours: 0, plain: 12 });
    await Promise.all([plain.queue.close(), ours.queue.close()]);
  });

  it('honours removeOnComplete, and fails an attempt whose result JSON cannot encode or whose processor throws, as a plain Worker does', async () => {
    const jobs = [
      { name: 'j', data: { result: 'kept' } },
      { name: 'j', data: { result: 'removed' }, opts: { removeOnComplete: true } },
      { name: 'bigint', data: {} },
      { name: 'throws', data: {} },
    ];
    const processor: Processor = async (job) => {
      if (job.name === 'throws') throw new Error('the processor threw');
      return job.name === 'bigint' ? { n: 10n } : results(job);
    };
    const outcome = async (cls: WorkerClass) => {
      const { seen, queue, ids } = await run(cls, jobs, processor);
      const [kept, removed, bigint, threw] = await Promise.all(ids.map((id) => Job.fromId(queue, id)));
      await queue.close();
      return {
        completed: seen.completed.map((c) => c.result).sort(),
        failed: seen.failed.map((f) => ({ ...f, id: ids.indexOf(f.id) })).sort((a, b) => a.id - b.id),
        errors: seen.errors,
        kept: await kept?.getState(),
        removed: removed === undefined,
        bigint: await bigint?.getState(),
        threw: { state: await threw?.getState(), reason: threw?.failedReason, attemptsMade: threw?.attemptsMade },
      };
    };
    const ours = await outcome(TickworkWorker as unknown as WorkerClass);
    expect(ours).toEqual({
      completed: ['kept', 'removed'],
      failed: [
        { id: 2, message: expect.stringMatching(/BigInt/) },
        { id: 3, message: 'the processor threw' },
      ],
      errors: [expect.stringMatching(/BigInt/)],
      kept: 'completed',
      removed: true,
      bigint: 'failed',
      threw: { state: 'failed', reason: 'the processor threw', attemptsMade: 1 },
    });
    expect(ours).toEqual(await outcome(Worker));
  });

  it("reports an acknowledgement BullMQ refuses (the job's lock gone) with BullMQ's error, as a plain Worker does", async () => {
    const outcome = async (cls: WorkerClass) => {
      const name = `tw-${queueNo++}`;
      const queue = new Queue(name, { connection: server.client(), prefix: 'tw' });
      const job = await queue.add('j', {});
      const redis = server.client();
      const errors: string[] = [];
      let ran = false;
      const worker = new cls(name, async (j) => ((await redis.del(`tw:${name}:${j.id}:lock`)), (ran = true), 'done'), { connection: server.client(), prefix: 'tw', concurrency: 1 });
      worker.on('error', (err) => errors.push(err.message.replace(String(job.id), '<id>')));
      try {
        // Two reports: the completion refused, then the failure the refusal makes it (refused too: no lock).
        // Wait for both, so how soon close() comes cannot cut the second off on one side only.
        await waitFor(async () => ran && errors.length >= 2, { timeoutMs: 30_000, what: 'the refused completion and failure reported' });
      } finally {
        await worker.close();
      }
      const state = await job.getState();
      await queue.close();
      redis.disconnect();
      return { errors, state };
    };
    const ours = await outcome(TickworkWorker as unknown as WorkerClass);
    expect(ours.errors[0]).toMatch(/Missing lock for job <id>\. moveToFinished/);
    expect(ours).toEqual(await outcome(Worker));
  });

  it('tries an acknowledgement again after a connection error, as a plain Worker does (one completion, no error reported)', async () => {
    const outcome = async (cls: WorkerClass) => {
      const name = `tw-${queueNo++}`;
      const queue = new Queue(name, { connection: server.client(), prefix: 'tw' });
      const job = await queue.add('j', {});
      const seen = { completed: 0, failed: 0, errors: [] as string[], refused: 0 };
      const worker = new cls(name, async () => 'done', { connection: server.client(), prefix: 'tw', concurrency: 1, runRetryDelay: 10, autorun: false });
      // The first acknowledgement fails as a refused connection would, before reaching Redis. TickworkWorker
      // sends it through the execCommand it kept (its short path); a plain Worker through its backend's.
      const holder = (cls === Worker ? (worker as unknown as { backend: object }).backend : worker) as unknown as Record<string, (c: unknown, n: string, a: unknown[]) => Promise<unknown>>;
      const field = cls === Worker ? 'execCommand' : 'exec';
      const exec = holder[field] as (c: unknown, n: string, a: unknown[]) => Promise<unknown>;
      holder[field] = (client, command, args) => {
        if (command === 'moveToFinished' && seen.refused++ === 0) return Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }));
        return exec.call(holder, client, command, args);
      };
      worker.on('completed', () => seen.completed++);
      worker.on('failed', () => seen.failed++);
      worker.on('error', (err) => seen.errors.push(err.message));
      void worker.run();
      try {
        await waitFor(async () => (await job.getState()) === 'completed', { timeoutMs: 15_000, what: 'the job completed after the retried acknowledgement' });
      } finally {
        await worker.close();
      }
      await queue.close();
      return { completed: seen.completed, failed: seen.failed, errors: seen.errors, tries: seen.refused };
    };
    const ours = await outcome(TickworkWorker as unknown as WorkerClass);
    expect(ours).toEqual({ completed: 1, failed: 0, errors: [], tries: 2 });
    expect(ours).toEqual(await outcome(Worker));
  });

  it("keeps a BullMQ job scheduler's jobs repeating (their next job is added as BullMQ's own worker adds it)", async () => {
    const name = `tw-${queueNo++}`;
    const queue = new Queue(name, { connection: server.client(), prefix: 'tw' });
    await queue.upsertJobScheduler('every-50ms', { every: 50 }, { name: 'tick', data: {} });
    let runs = 0;
    const worker = new TickworkWorker(name, async () => runs++, { connection: server.client(), prefix: 'tw', concurrency: 1 });
    try {
      await waitFor(async () => runs >= 4, { timeoutMs: 15_000, what: 'four runs of the job scheduler' });
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});
