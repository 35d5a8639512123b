import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLogger, defineJob, occurrenceKey } from '@tickwork/core';
import { HISTORY_CAP, lastOutcomes, mergeOccurrence, readHistory, runRecorder, scheduleKeys, type OccurrenceRecord } from '@tickwork/schedules';

let server: RedisServerHandle;
let redis: Redis;
const log = createLogger('test', 'silent');
const job = defineJob({ name: 'h.job', queue: 'q', schema: z.object({}), schedule: { every: { minutes: 1 }, tz: 'UTC' }, handler: async () => 1 });

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
});
afterAll(async () => server.stop());

const record = (schedule: string, ms: number, extra: Partial<OccurrenceRecord> = {}): OccurrenceRecord => ({
  id: occurrenceKey(schedule, new Date(ms)),
  schedule,
  nominal: new Date(ms).toISOString(),
  trigger: 'schedule',
  ...extra,
});

describe('occurrence history', () => {
  it('the start of a run of the schedule store is gated: a schedule gone since the occurrence was planned skips it', async () => {
    const gone = runRecorder(redis, 'p1', job, { id: 'g1', name: job.name, data: {}, scheduled: { schedule: 'tenant:gone', nominal: 60_000, catchUp: false, v: 3 } }, log);
    expect(await gone?.started(1)).toBe('removed');
    expect((await readHistory(redis, 'p1', 'tenant:gone'))[0]).toMatchObject({ id: 'tenant:gone@1970-01-01T00:01:00.000Z', outcome: 'skipped-removed', jobId: 'g1' });
    // occurrences from before the store carry no version: not gated
    const legacy = runRecorder(redis, 'p1', job, { id: 'g2', name: job.name, data: {}, scheduled: { schedule: job.name, nominal: 60_000, catchUp: false } }, log);
    expect(await legacy?.started(1)).toBe('ok');
  });

  it('records start, retries and the final outcome; keeps last success/failure apart from the capped list', async () => {
    const ok = runRecorder(redis, 'p2', job, { id: 'j1', name: job.name, data: {}, scheduled: { schedule: job.name, nominal: 60_000, catchUp: false } }, log);
    await ok?.started(1);
    await ok?.succeeded();
    const caught = runRecorder(redis, 'p2', job, { id: 'j2', name: job.name, data: {}, scheduled: { schedule: job.name, nominal: 120_000, catchUp: true } }, log);
    await caught?.started(1);
    await caught?.failed(new Error('flaky'), false);
    await caught?.started(2);
    await caught?.failed(new Error('boom'), true);
    // A run now (runNow's token in its occurrence) counts as manual; an ad-hoc enqueue of the job does not count.
    const manual = runRecorder(redis, 'p2', job, { id: 'j3', name: job.name, data: {}, scheduled: { schedule: job.name, nominal: 150_000, catchUp: false, m: 'tok3' } }, log);
    await manual?.succeeded();
    expect(runRecorder(redis, 'p2', job, { id: 'adhoc', name: job.name, data: {} }, log)).toBeUndefined();
    const overlap = runRecorder(redis, 'p2', job, { id: 'j4', name: job.name, data: {}, scheduled: { schedule: job.name, nominal: 30_000, catchUp: false } }, log);
    await overlap?.skippedOverlap('previous run still active');

    const history = await readHistory(redis, 'p2', job.name);
    const byId = new Map(history.map((r) => [r.id, r]));
    expect(byId.get('h.job@1970-01-01T00:01:00.000Z')).toMatchObject({ outcome: 'completed', attempts: 1, trigger: 'schedule', jobId: 'j1' });
    expect(byId.get('h.job@1970-01-01T00:02:00.000Z')).toMatchObject({ outcome: 'failed', attempts: 2, trigger: 'catch-up', error: 'boom' });
    expect(byId.get('h.job@manual-tok3')).toMatchObject({ outcome: 'manual', trigger: 'manual', jobId: 'j3' });
    expect(history.some((r) => r.jobId === 'adhoc')).toBe(false);
    expect(byId.get('h.job@1970-01-01T00:00:30.000Z')).toMatchObject({ outcome: 'skipped-overlap', error: 'previous run still active' });
    const last = await lastOutcomes(redis, 'p2', job.name);
    expect(last.lastFailure?.id).toBe('h.job@1970-01-01T00:02:00.000Z');
    expect(last.lastSuccess?.outcome).toBe('manual');
    // a re-drive of the schedule's run counts as manual; a re-drive of an ad-hoc run does not
    const redrive = (scheduleId?: string) => ({ idempotencyKey: 'k', redriveCount: 1, rootDlqJobId: 'r', history: [], ...(scheduleId && { scheduleId }) });
    expect(runRecorder(redis, 'p2', job, { id: 'rd1', name: job.name, data: {}, redrive: redrive(job.name) }, log)).toBeDefined();
    expect(runRecorder(redis, 'p2', job, { id: 'rd2', name: job.name, data: {}, redrive: redrive() }, log)).toBeUndefined();
    // an unscheduled job has no history
    const plain = defineJob({ name: 'plain', queue: 'q', schema: z.object({}), handler: async () => 1 });
    expect(runRecorder(redis, 'p2', plain, { id: 'x', name: 'plain', data: {} }, log)).toBeUndefined();
  });

  it('trims the list to the cap but never the last success', async () => {
    const first = runRecorder(redis, 'p3', job, { id: 'first', name: job.name, data: {}, scheduled: { schedule: job.name, nominal: 0, catchUp: false } }, log);
    await first?.succeeded();
    const recs = Array.from({ length: HISTORY_CAP + 20 }, (_, i) => record(job.name, (i + 1) * 60_000, { outcome: 'missed' }));
    for (const r of recs) await mergeOccurrence(redis, 'p3', job.name, r.id, Date.parse(r.nominal), r, r);
    const k = scheduleKeys('p3', job.name);
    expect(await redis.zcard(k.history)).toBe(HISTORY_CAP);
    expect(await redis.hlen(k.records)).toBe(HISTORY_CAP);
    const history = await readHistory(redis, 'p3', job.name, HISTORY_CAP);
    expect(history.at(-1)?.nominal).toBe(new Date(21 * 60_000).toISOString());
    expect((await lastOutcomes(redis, 'p3', job.name)).lastSuccess?.jobId).toBe('first');
  });
});
