import { createCatalog, defineJob, REDRIVE_OPTION, SCHEDULED_RUN_OPTION, type QueueSet } from '@tickwork/core';
import { listDeadLetters, type DeadLetter } from '@tickwork/operations';
import { waitFor, type RedisServerHandle } from '@tickwork/testkit';
import { Worker, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { DeadLetterRouting } from './dead-letter.js';
import { startPoolFixture, type PoolFixture } from './testing/pool-fixture.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

/** Served by the pool: jobs whose tickwork options are malformed must fail for good, naming the option. */
const PQ = 'poison-opts';
/** Not served by the pool: bare workers fail jobs there, as a process dying before its failed event would. */
const SQ1 = 'poison-sweep-1';
const SQ2 = 'poison-sweep-2';
const RUNS = 'test:poison-runs';

const recorder = defineJob({
  name: 't.records',
  queue: PQ,
  schema: z.object({ n: z.number() }),
  retry: { attempts: 3, backoff: { type: 'fixed', delayMs: 10 } },
  async handler(ctx) {
    await ctx.redis.rpush(RUNS, String(ctx.data.n));
    return 'ran';
  },
});
const catalog = createCatalog([recorder]);

let fx: PoolFixture;
let server: RedisServerHandle;
let redis: Redis;
let queues: QueueSet;
let routing: DeadLetterRouting;
let captured: PoolFixture['captured'];

beforeAll(async () => {
  fx = await startPoolFixture(catalog, [PQ]);
  ({ server, redis, queues, routing, captured } = fx);
});

afterAll(() => fx?.stop());

const entryOf = (queue: string, jobId: string): Promise<DeadLetter> =>
  waitFor(async () => (await listDeadLetters(queues, queue)).find((d) => d.entry.originalJobId === jobId), {
    timeoutMs: 20_000,
    what: `DLQ entry for ${jobId}`,
  });

describe("tickwork's own job options are validated like payloads", () => {
  const at = '2030-01-01T00:00:00.000Z';
  const historyItem = { jobId: 'j', failureReason: 'x', attemptsMade: 1, firstFailedAt: at, lastFailedAt: at, deadLetteredAt: at, redrivenAt: at };
  const cases: { jobId: string; option: string; value: unknown; reason: RegExp }[] = [
    {
      jobId: 'occurrence-far-future',
      option: SCHEDULED_RUN_OPTION,
      value: { schedule: 'x', nominal: 1e20, catchUp: false },
      reason: /^invalid job option tickworkOccurrence: nominal: Too big/,
    },
    {
      jobId: 'occurrence-wrong-types',
      option: SCHEDULED_RUN_OPTION,
      value: { schedule: 5, nominal: 'tomorrow' },
      reason: /^invalid job option tickworkOccurrence: schedule: .*; nominal: /,
    },
    {
      jobId: 'redrive-bad-nominal',
      option: REDRIVE_OPTION,
      // (Not an empty history: BullMQ stores options through Lua, where [] comes back as {}.)
      value: { idempotencyKey: 'k', nominalTime: '2030-01-01', redriveCount: 1, rootDlqJobId: 'r@1', history: [historyItem] },
      reason: /^invalid job option tickworkRedrive: nominalTime: /,
    },
    {
      jobId: 'redrive-bad-date',
      option: REDRIVE_OPTION,
      value: {
        idempotencyKey: 'k',
        redriveCount: 1,
        rootDlqJobId: 'r@1',
        history: [{ ...historyItem, firstFailedAt: 'yesterday' }],
      },
      reason: /^invalid job option tickworkRedrive: history\.0\.firstFailedAt: /,
    },
  ];

  it.each(cases)('$jobId: never runs, one attempt, to the DLQ with a reason naming the option; the raw value is kept', async (c) => {
    await queues.get(PQ).add('t.records', { n: 1 }, { jobId: c.jobId, attempts: 3, [c.option]: c.value } as JobsOptions);
    const d = await entryOf(PQ, c.jobId);
    expect(d.entry.failureReason).toMatch(c.reason);
    expect(d.entry.attemptsMade).toBe(1);
    expect(d.entry.payload).toEqual({ n: 1 });
    expect(d.entry.unparsedReason).toBeUndefined();
    // Nothing is lost: the malformed option stays in the entry's copy of the options (a re-drive does not reuse it).
    expect(d.entry.originalOptions[c.option]).toEqual(c.value);
    expect(await redis.lrange(RUNS, 0, -1)).toEqual([]);
  });
});

describe('the DLQ sweep cannot be jammed', () => {
  /** Adds a job and fails it for good through a bare worker, whose failed event nothing handles. */
  async function failLost(worker: Worker, queue: string, jobId: string, opts: Record<string, unknown> = {}): Promise<void> {
    await queues.get(queue).add('t.records', { n: 2 }, { jobId, attempts: 1, ...opts } as JobsOptions);
    const job = await waitFor(() => worker.getNextJob(`token-${jobId}`), { what: `bare worker takes ${jobId}` });
    expect(job.id).toBe(jobId);
    await job.moveToFailed(new Error(`${jobId} failed`), `token-${jobId}`);
  }

  it('good failures before and after poison ones, and in the next queue, are all dead-lettered; the poison ones too', async () => {
    const w1 = new Worker(SQ1, null, { connection: server.client(), prefix: 'tw' });
    const w2 = new Worker(SQ2, null, { connection: server.client(), prefix: 'tw' });
    try {
      await failLost(w1, SQ1, 'good-older');
      // Describing this one threw (Invalid time value) and stopped the whole sweep.
      await failLost(w1, SQ1, 'poison-occurrence', { [SCHEDULED_RUN_OPTION]: { schedule: 'x', nominal: 1e20 } });
      // BullMQ itself cannot parse this one: its data is not JSON (getFailed threw for the whole page).
      await failLost(w1, SQ1, 'poison-data');
      await redis.hset(queues.get(SQ1).toKey('poison-data'), 'data', '{not json');
      await failLost(w1, SQ1, 'good-newer');
      await failLost(w2, SQ2, 'good-next-queue');
      routing.attach(w1);
      routing.attach(w2);
      expect(await routing.sweep()).toBeGreaterThanOrEqual(5);

      for (const id of ['good-older', 'good-newer']) {
        const d = await entryOf(SQ1, id);
        expect(d.entry.failureReason).toBe(`${id} failed`);
        expect(d.entry.payload).toEqual({ n: 2 });
      }
      expect((await entryOf(SQ2, 'good-next-queue')).entry.failureReason).toBe('good-next-queue failed');

      const occurrence = await entryOf(SQ1, 'poison-occurrence');
      expect(occurrence.entry.failureReason).toBe('poison-occurrence failed');
      expect(occurrence.entry.nominalTime).toBeNull();
      expect(occurrence.entry.originalOptions[SCHEDULED_RUN_OPTION]).toEqual({ schedule: 'x', nominal: 1e20 });

      const raw = await entryOf(SQ1, 'poison-data');
      expect(raw.entry.unparsedReason).toMatch(/^tickwork could not read this job: SyntaxError: /);
      expect(raw.entry.payload).toBe('{not json');
      expect(raw.entry.failureReason).toBe('poison-data failed');
      expect(raw.entry.jobName).toBe('t.records');
      expect(raw.entry.originalOptions).toMatchObject({ attempts: 1 });
      expect(raw.entry.idempotencyKey).toBe('t.records#poison-data');
      expect(captured.entries().some((e) => e.msg === 'job dead-lettered as a raw entry' && e.jobId === 'poison-data')).toBe(true);
      expect(captured.entries().some((e) => e.msg === 'alert' && (e.alert as { jobId?: string }).jobId === 'poison-data')).toBe(true);

      // Nothing is left behind in the failed sets for removeOnFail to delete.
      expect(await queues.get(SQ1).getRanges(['failed'])).toEqual([]);
      expect(await queues.get(SQ2).getRanges(['failed'])).toEqual([]);
    } finally {
      await w1.close();
      await w2.close();
    }
  });
});
