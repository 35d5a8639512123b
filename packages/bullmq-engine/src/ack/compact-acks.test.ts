/**
 * Acknowledgements that go compact in the fold's call (ack-fold-lua.ts: the queue's keys
 * once per call, each job's options as JSON) do what BullMQ's own acknowledgements do. What a user relies
 * on: the same jobs completed with the same return values, kept or removed as their removeOnComplete says,
 * the same `completed` events in the queue's event stream (what QueueEvents and Bull Board read), the same
 * metrics, and next jobs fetched by the acknowledgements as before (their data and options as they were added). Three workers drain the same jobs: a
 * plain BullMQ Worker (the reference), a plain Worker whose acknowledgements are folded (BullMQ's packed
 * options), and a TickworkWorker with the fold (its options never packed: completion-args.ts).
 */
import { foldAcks } from './ack-fold.js';
import { monitorRedis, startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import { Job, Queue, Worker, type JobsOptions, type Processor, type WorkerOptions } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TickworkWorker } from '../worker/tickwork-worker.js';
import { ackConnectionOf } from '../worker/ack-connection.js';

let server: RedisServerHandle;
let queueNo = 0;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server.stop();
});

/** Jobs that finish together, a group at a time, so their acknowledgements share calls and fetch the next group. */
const GROUP = 8;
const RESULTS: unknown[] = [null, 'ünïcødé ☃', { nested: [1, null] }, '{"looks":"json"}', 42, 'x'.repeat(2000), undefined];
/** Job data a fetched job's reply carries (as JSON from the fold's script: ack-fold-lua.ts) and must come back as it went. */
const DATA = ['ünïcødé ☃ 😀', 'a/b\\c"d\'e', '\u0000\u001f\u007f\u2028', 'y'.repeat(3000), ''];
const workerOptions: Partial<WorkerOptions> = { name: 'w1', metrics: { maxDataPoints: 10 }, limiter: { max: 100_000, duration: 1000 } };
type Mode = 'bullmq' | 'folded' | 'tickwork';

interface DrainOptions {
  count?: number;
  worker?: Partial<WorkerOptions>;
  /** Before the jobs are added (a queue's global concurrency, say). */
  setUp?: (queue: Queue) => Promise<unknown>;
}

async function drain(mode: Mode, optsOf: (i: number) => JobsOptions, o: DrainOptions = {}) {
  const count = o.count ?? 2 * GROUP;
  const name = `ca-${queueNo++}`;
  const queue = new Queue(name, { connection: server.client(), prefix: 'tw' });
  await o.setUp?.(queue);
  await queue.addBulk(Array.from({ length: count }, (_, i) => ({ name: 'j', data: { i, s: DATA[i % DATA.length] }, opts: optsOf(i) })));
  const fetched: { i: number; data: unknown; jobOpts: unknown; processedBy: string | undefined; attemptsStarted: number; processedOn: boolean }[] = [];
  const started = new Map<number, number>();
  const release = new Map<number, () => void>();
  const gates = new Map<number, Promise<void>>();
  const gate = (g: number) => gates.get(g) ?? (gates.set(g, new Promise<void>((r) => release.set(g, r))), gates.get(g) as Promise<void>);
  let worker!: Worker;
  const processor: Processor = async (job) => {
    if (mode !== 'bullmq') foldAcks(await (ackConnectionOf(worker) as NonNullable<ReturnType<typeof ackConnectionOf>>));
    const i = (job.data as { i: number }).i;
    fetched.push({ i, data: job.data, jobOpts: job.opts, processedBy: job.processedBy, attemptsStarted: job.attemptsStarted, processedOn: typeof job.processedOn === 'number' });
    const g = Math.floor(i / GROUP);
    const waiting = gate(g);
    started.set(g, (started.get(g) ?? 0) + 1);
    if (started.get(g) === Math.min(GROUP, count - g * GROUP)) release.get(g)?.();
    await waiting;
    return RESULTS[i % RESULTS.length];
  };
  const calls: string[][] = [];
  let lean = 0;
  const monitor = await monitorRedis(server, ({ args, source }) => {
    if (source !== 'lua') return void (/^evalsha$/i.test(args[0] ?? '') && calls.push(args));
    // The lean path asks whether a job has children with one EXISTS of two keys (ack-lean-lua.ts); BullMQ's script with SCARD.
    if (/^exists$/i.test(args[0] ?? '') && args.length === 3) lean++;
  });
  const cls = mode === 'tickwork' ? (TickworkWorker as unknown as typeof Worker) : Worker;
  worker = new cls(name, processor, { connection: server.client(), prefix: 'tw', concurrency: GROUP, ...(o.worker ?? workerOptions) });
  let done = 0;
  const errors: string[] = [];
  worker.on('completed', () => done++);
  worker.on('error', (err) => errors.push(err.message));
  try {
    await waitFor(async () => done === count, { timeoutMs: 15_000, what: `${count} jobs completed (${mode})` });
  } finally {
    await worker.close();
    monitor.stop();
  }
  const redis = server.client();
  const jobs = await Promise.all(Array.from({ length: count }, (_, i) => Job.fromId(queue, String(i + 1))));
  const events = (await redis.xrange(`tw:${name}:events`, '-', '+')).map(([, f]) => Object.fromEntries(f.flatMap((_, k) => (k % 2 ? [] : [[f[k], f[k + 1]]]))) as Record<string, string>);
  const outcome = {
    errors,
    jobs: await Promise.all(jobs.map(async (j) => j && { i: (j.data as { i: number }).i, state: await j.getState(), returnvalue: j.returnvalue, attemptsMade: j.attemptsMade, finished: j.finishedOn !== undefined })),
    completedCount: await redis.zcard(`tw:${name}:completed`),
    completedEvents: events.filter((e) => e.event === 'completed').map((e) => `${e.jobId}:${e.returnvalue}:${e.prev}`).sort(),
    activeEvents: events.filter((e) => e.event === 'active').length,
    promotedEvents: events.filter((e) => e.event === 'waiting' && e.prev === 'delayed').length,
    drainedEvent: events.some((e) => e.event === 'drained'),
    fetched: fetched.sort((a, b) => a.i - b.i),
    // `limiter` is the rate limiter's counter, which expires a second after a fetch: whether it is still there
    // when the drain ends is timing (a loaded machine), not state either side left (a CI run failed on it).
    left: (await redis.keys(`tw:${name}:*`)).map((k) => k.slice(`tw:${name}:`.length)).filter((k) => !/^(events|meta|id|marker|stalled-check|limiter|metrics:.*)$/.test(k)).sort(),
    metricsCount: await redis.hget(`tw:${name}:metrics:completed`, 'count'),
  };
  redis.disconnect();
  await queue.close();
  // A call of compact acknowledgements carries their options but the token as JSON, once (a plain Worker's
  // unpacked from BullMQ's msgpack).
  const compact = calls.filter((a) => a.some((w) => w.startsWith('{') && w.includes('"keepJobs":') && !w.includes('"token":'))).length;
  return { outcome, compact, lean };
}

describe('compact acknowledgements', () => {
  it("complete jobs, keep or remove them, and announce them as BullMQ's own do", async () => {
    const optsOf = (i: number): JobsOptions => [{}, { removeOnComplete: true }, { attempts: 3 }, { removeOnComplete: { age: 3600 } }, { removeOnComplete: false }][i % 5] as JobsOptions;
    const bull = await drain('bullmq', optsOf);
    expect(bull.outcome.errors).toEqual([]);
    expect(bull.outcome.completedEvents).toHaveLength(2 * GROUP);
    for (const mode of ['folded', 'tickwork'] as const) {
      const ours = await drain(mode, optsOf);
      expect(ours.outcome, mode).toEqual(bull.outcome);
      expect(ours.compact, `${mode}: acknowledgements sent compact`).toBeGreaterThan(0);
    }
  });

  it("take the lean path for jobs removed on completion: delayed jobs promoted and prioritized ones fetched as BullMQ's script does", async () => {
    // 16 plain jobs, then 4 delayed (due by the time the acknowledgements fetch them) and 4 prioritized.
    const optsOf = (i: number): JobsOptions => ({ removeOnComplete: true, ...(i >= 2 * GROUP && i < 2 * GROUP + 4 && { delay: 1 }), ...(i >= 2 * GROUP + 4 && { priority: 3 }) });
    const plain = { name: 'w2' };
    const bull = await drain('bullmq', optsOf, { count: 3 * GROUP, worker: plain });
    expect(bull.outcome.errors).toEqual([]);
    expect(bull.outcome.promotedEvents).toBe(4);
    expect(bull.outcome.fetched.every((f) => f.processedBy === 'w2' && f.attemptsStarted === 1 && f.processedOn)).toBe(true);
    expect(bull.outcome.left).toEqual([]);
    for (const mode of ['folded', 'tickwork'] as const) {
      const ours = await drain(mode, optsOf, { count: 3 * GROUP, worker: plain });
      expect(ours.outcome, mode).toEqual(bull.outcome);
      expect(ours.lean, `${mode}: acknowledgements on the lean path`).toBeGreaterThan(0);
    }
  });

  it("leave to BullMQ's script what the lean path does not serve (a queue with a global concurrency), with the same outcome", async () => {
    const optsOf = (): JobsOptions => ({ removeOnComplete: true });
    const o = { worker: { name: 'w2' }, setUp: (q: Queue) => q.setGlobalConcurrency(50) };
    const bull = await drain('bullmq', optsOf, o);
    for (const mode of ['folded', 'tickwork'] as const) {
      const ours = await drain(mode, optsOf, o);
      expect(ours.outcome, mode).toEqual(bull.outcome);
      expect(ours.compact, `${mode}: acknowledgements sent compact`).toBeGreaterThan(0);
      expect(ours.lean, `${mode}: none on the lean path`).toBe(0);
    }
  });

  it('trim the completed jobs to a removeOnComplete count, as BullMQ does', async () => {
    const optsOf = (): JobsOptions => ({ removeOnComplete: { count: 3 } });
    const bull = await drain('bullmq', optsOf);
    expect(bull.outcome.completedCount).toBe(3);
    for (const mode of ['folded', 'tickwork'] as const) {
      const ours = await drain(mode, optsOf);
      // Which three are kept follows the order acknowledgements ran in; how many, and what they hold, not.
      const kept = (o: typeof bull.outcome) =>
        o.jobs.flatMap((j) => (j ? [{ state: j.state, attemptsMade: j.attemptsMade, finished: j.finished, itsResult: JSON.stringify(j.returnvalue) === JSON.stringify(RESULTS[j.i % RESULTS.length] ?? null) }] : []));
      const keys = (o: typeof bull.outcome) => o.left.map((k) => (/^\d+$/.test(k) ? 'a job' : k)).sort();
      expect({ ...ours.outcome, jobs: kept(ours.outcome), left: keys(ours.outcome) }, mode).toEqual({ ...bull.outcome, jobs: kept(bull.outcome), left: keys(bull.outcome) });
      expect(ours.compact, `${mode}: acknowledgements sent compact`).toBeGreaterThan(0);
    }
  });
});
