import { createEnqueue, createLogger, QueueSet, type Enqueue, type JobContext } from 'tickwork';
import { occurrencesBetween, ruleOf } from '@tickwork/schedules';
import { stepKey } from '@tickwork/exactly-once';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import { DateTime } from 'luxon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_DIGEST_USERS } from '../demo-data.js';
import { catalog } from '../index.js';
import { digestMorning } from './digest-morning.js';

let server: RedisServerHandle;
let queues: QueueSet;
const log = createLogger('test', 'silent');

beforeAll(async () => {
  server = await startRedisServer();
  queues = new QueueSet(server.client(), 'fan', log);
});
afterAll(async () => {
  await queues.close();
  await server.stop();
});

function ctxAt(nominal: Date, enqueue: Enqueue): JobContext<Record<string, never>> {
  const idempotencyKey = `digest.morning@${nominal.toISOString()}`;
  return {
    data: {}, log, jobId: 'x', jobName: digestMorning.name, queue: 'email', attempt: 1, maxAttempts: 1,
    signal: new AbortController().signal, idempotencyKey, nominalTime: nominal,
    isCatchUp: false, step: (id, fn) => fn({ id, key: stepKey(idempotencyKey, id) }), enqueue, redis: server.client(),
    redisStep: () => Promise.reject(new Error('digest.morning takes no Redis steps')),
    progress: async () => undefined,
    lock: () => Promise.reject(new Error('digest.morning takes no locks')),
  };
}

describe('digest.morning fan-out', { timeout: 60_000 }, () => {
  it('sends each user exactly one digest per local day at 09:00 local, across DST changes, despite retries and replicas', async () => {
    const real = createEnqueue(catalog, queues);
    const calls = new Map<string, number>();
    const counting: Enqueue = async (job, data, opts) => {
      calls.set(opts?.jobId ?? '?', (calls.get(opts?.jobId ?? '?') ?? 0) + 1);
      return real(job, data, opts);
    };
    const rule = ruleOf(digestMorning.name, digestMorning.schedule ?? { every: { minutes: 15 }, tz: 'UTC' });
    // New York springs forward Mar 8, Berlin Mar 29, Lord Howe falls back (30 min) Apr 5 2026.
    const windows = [
      ['2026-03-06T00:00:00Z', '2026-03-10T00:00:00Z'],
      ['2026-03-27T00:00:00Z', '2026-04-07T00:00:00Z'],
    ] as const;
    for (const [from, to] of windows) {
      const slots = occurrencesBetween(rule, new Date(from), new Date(to)).occurrences;
      for (const slot of slots) {
        // every slot runs twice at once: a second replica's run, or a retry after a crash
        await Promise.all([digestMorning.handler(ctxAt(slot.at, counting)), digestMorning.handler(ctxAt(slot.at, counting))]);
      }
    }
    // The slot logic alone picks each (user, local day) exactly once: every key was enqueued by exactly 2 calls.
    expect(new Set(calls.values())).toEqual(new Set([2]));
    const jobs = await queues.get('email').getJobs(['wait'], 0, -1);
    const ids = jobs.map((j) => String(j.id));
    expect(new Set(ids).size).toBe(ids.length);
    for (const user of DEMO_DIGEST_USERS) {
      const days = ids.filter((id) => id.startsWith(`digest.morning@${user.id}@`)).map((id) => id.split('@')[2]).sort();
      // 4 local days in the first window (Mar 6-9), 11 in the second (Mar 27 - Apr 6), each exactly once,
      // for users east and west of UTC alike (a day whose 09:00 falls in the window).
      const expected: string[] = [];
      for (const [from, to] of windows) {
        for (let d = DateTime.fromISO(from, { zone: user.tz }).startOf('day'); d < DateTime.fromISO(to); d = d.plus({ days: 1 })) {
          const nine = d.set({ hour: 9 });
          if (nine >= DateTime.fromISO(from) && nine < DateTime.fromISO(to)) expected.push(d.toISODate() ?? '');
        }
      }
      expect(days, user.tz).toEqual(expected.sort());
    }
    // each email is sent at 09:00-09:14 local time on its day
    const sample = jobs.find((j) => String(j.id).includes('2026-03-08') && (j.data as { to: string }).to === DEMO_DIGEST_USERS[0]?.email);
    expect(sample).toBeDefined();
  });
});
