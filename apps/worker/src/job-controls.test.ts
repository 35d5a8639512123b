/**
 * What BullMQ users expect, set in defineJob: a job's priority, a queue's rate limit, and ctx.progress.
 * A real Redis and the worker's own pool (startWorkerPool), as the worker app runs it.
 */
import { createCatalog, createEnqueue, createLogger, defineJob, JobDefinitionError, QueueSet, type AnyJob } from '@tickwork/core';
import { startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startWorkerPool, type WorkerPool } from './worker-pool.js';

const log = createLogger('test', 'silent');
let server: RedisServerHandle | undefined;
let pool: WorkerPool | undefined;
let queues: QueueSet | undefined;

afterEach(async () => {
  await pool?.drain(2000);
  await queues?.close();
  await server?.stop();
  pool = undefined;
  queues = undefined;
  server = undefined;
});

/** Runs `jobs` on a private Redis: enqueues through `add` first, then starts one worker process's pool. */
async function run(jobs: AnyJob[], concurrency: number, add: (enqueue: ReturnType<typeof createEnqueue>) => Promise<void>) {
  server = await startRedisServer();
  const catalog = createCatalog(jobs);
  queues = new QueueSet(server.client(), 'tw', log);
  const enqueue = createEnqueue(catalog, queues);
  await add(enqueue);
  pool = startWorkerPool({ catalog, redis: server.client(), log, enqueue, redisTarget: server.url, prefix: 'tw', concurrency });
  return { queues, enqueue };
}

const schema = z.object({ n: z.number() });

describe('defineJob: priority, rate limit, progress', () => {
  it('runs a job with a higher priority (a lower number) before waiting jobs of a lower one', async () => {
    const order: string[] = [];
    const routine = defineJob({ name: 'c.routine', queue: 'c', schema, priority: 10, handler: async (ctx) => void order.push(`routine-${ctx.data.n}`) });
    const urgent = defineJob({ name: 'c.urgent', queue: 'c', schema, priority: 1, handler: async (ctx) => void order.push(`urgent-${ctx.data.n}`) });
    await run([routine, urgent], 1, async (enqueue) => {
      for (let n = 0; n < 5; n++) await enqueue(routine, { n });
      await enqueue(urgent, { n: 0 });
      await enqueue(routine, { n: 5 }, { priority: 1 }); // enqueue overrides the job's priority
    });
    await waitFor(async () => order.length === 7, { timeoutMs: 15_000, what: 'all seven runs' });
    expect(order.slice(0, 2).sort()).toEqual(['routine-5', 'urgent-0']);
    expect(order.slice(2)).toEqual(['routine-0', 'routine-1', 'routine-2', 'routine-3', 'routine-4']);
  });

  it("starts at most the queue's rate limit of runs per period, across the queue's jobs", async () => {
    const starts: number[] = [];
    const limited = { max: 2, duration: { seconds: 1 } };
    const a = defineJob({ name: 'r.a', queue: 'r', schema, rateLimit: limited, handler: async () => void starts.push(Date.now()) });
    const b = defineJob({ name: 'r.b', queue: 'r', schema, rateLimit: limited, handler: async () => void starts.push(Date.now()) });
    await run([a, b], 10, async (enqueue) => {
      for (let n = 0; n < 3; n++) await enqueue(a, { n });
      for (let n = 0; n < 3; n++) await enqueue(b, { n });
    });
    await waitFor(async () => starts.length === 6, { timeoutMs: 20_000, what: 'six runs' });
    // Six runs at two per second take at least two more periods after the first: a lower bound, so a slow
    // machine cannot make it fail; without the limiter they all start within milliseconds.
    const sorted = [...starts].sort((x, y) => x - y);
    expect((sorted[5] ?? 0) - (sorted[0] ?? 0)).toBeGreaterThanOrEqual(1900);
  });

  it('keeps what the handler reports with ctx.progress on the job (shown in Bull Board)', async () => {
    const job = defineJob({
      name: 'p.report',
      queue: 'p',
      schema,
      handler: async (ctx) => {
        await ctx.progress(50);
        await ctx.progress({ done: ctx.data.n, of: 10 });
      },
    });
    const { queues: qs } = await run([job], 1, async (enqueue) => void (await enqueue(job, { n: 10 })));
    const done = await waitFor(async () => (await qs.get('p').getCompleted())[0], { timeoutMs: 15_000, what: 'the run to complete' });
    expect(done.progress).toEqual({ done: 10, of: 10 });
  });

  it('refuses a priority out of range, and rate limits that disagree on one queue, naming the job', () => {
    const job = (name: string, extra: Partial<AnyJob>) => defineJob({ name, queue: 'q', schema, handler: async () => undefined, ...extra });
    expect(() => createCatalog([job('bad.priority', { priority: 0 })])).toThrow(JobDefinitionError);
    expect(() => createCatalog([job('bad.priority', { priority: 1.5 })])).toThrow(/priority 1.5 must be an integer from 1/);
    const one = job('q.one', { rateLimit: { max: 5, duration: { seconds: 1 } } });
    const other = job('q.other', { rateLimit: { max: 6, duration: { seconds: 1 } } });
    expect(() => createCatalog([one, other])).toThrow(/q.other.*differs from q.one/);
    expect(() => createCatalog([job('q.zero', { rateLimit: { max: 0, duration: { seconds: 1 } } })])).toThrow(/rateLimit.max 0/);
    expect(createCatalog([one, job('q.plain', {})]).rateLimitOf('q')).toEqual({ max: 5, durationMs: 1000 });
  });
});
