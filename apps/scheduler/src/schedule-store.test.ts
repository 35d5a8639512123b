import { CatalogScheduleError, createSchedules, InvalidScheduleError, readHistory, ScheduleIdError, ScheduleNotFoundError, shardKeys, shardOf, encodeCore, encodeDef, historyKeysOf, jobIndexKey, SET_DEF, type ListPage, type Schedules } from '@tickwork/schedules';
import { createCatalog, createLogger, defineBatchJob, defineJob, PayloadValidationError, QueueSet, UnknownJobError, runScriptMany } from '@tickwork/core';
import { describe, expect, it } from 'vitest';
import { useRedisPerFile } from './testing/redis-per-file.js';
import { z } from 'zod';

const t = useRedisPerFile();
const queueSets = t.queueSets;
const log = createLogger('test', 'silent');

const report = defineJob({ name: 'reports.weekly', queue: 'reports', schema: z.object({ userId: z.string() }), handler: async () => undefined });
const nightly = defineJob({ name: 'nightly', queue: 'reports', schema: z.object({}), schedule: { pattern: '0 3 * * *', tz: 'UTC' }, handler: async () => undefined });
const sums = defineBatchJob({ name: 'sums', queue: 'sums', schema: z.object({}), batch: { size: 10, handler: async () => undefined } });
const catalog = createCatalog([report, nightly, sums]);
const T0 = Date.parse('2026-05-04T08:00:00Z'); // a Monday


let n = 0;
function setup(now = () => T0): { store: Schedules; prefix: string; queues: QueueSet } {
  const prefix = `st${++n}`;
  const queues = new QueueSet(t.redis, prefix, log);
  queueSets.push(queues);
  return { store: createSchedules({ redis: t.redis, queues, catalog, log, now }), prefix, queues };
}

const weekly = { job: report, pattern: '0 9 * * 1', tz: 'Europe/Lisbon', data: { userId: 'u42' } } as const;

describe('upsert', () => {
  it('refuses an unknown job, a batch job, invalid data, a bad pattern, an unknown tz, a bad id or a catalog id, storing nothing', async () => {
    const { store, prefix } = setup();
    await expect(store.upsert('a', { ...weekly, job: 'no.such.job' })).rejects.toBeInstanceOf(UnknownJobError);
    await expect(store.upsert('a', { ...weekly, job: 'sums', data: {} })).rejects.toThrow(/sums is a batch job \(defineBatchJob\), and batch jobs cannot be scheduled/);
    await expect(store.upsert('a', { ...weekly, data: { userId: 42 } as never })).rejects.toBeInstanceOf(PayloadValidationError);
    await expect(store.upsert('a', { ...weekly, pattern: '61 * * * *' })).rejects.toBeInstanceOf(InvalidScheduleError);
    await expect(store.upsert('a', { ...weekly, tz: 'Mars/Olympus' })).rejects.toThrow(/IANA timezone/);
    await expect(store.upsert('a', { ...weekly, missed: 'sometimes' as never })).rejects.toThrow(/missed/);
    await expect(store.upsert('', weekly)).rejects.toBeInstanceOf(ScheduleIdError);
    await expect(store.upsert('a\nb', weekly)).rejects.toBeInstanceOf(ScheduleIdError);
    await expect(store.upsert('x'.repeat(201), weekly)).rejects.toBeInstanceOf(ScheduleIdError);
    await expect(store.upsert('nightly', weekly)).rejects.toBeInstanceOf(CatalogScheduleError);
    expect(await t.redis.keys(`${prefix}:*`)).toEqual([]);
    expect(await store.count()).toBe(0);
  });

  it('creates a schedule with its next occurrence in its tz, and the same definition again changes nothing', async () => {
    const { store, prefix } = setup();
    const first = await store.upsert('reports.weekly:user-42', weekly);
    // 09:00 in Lisbon (UTC+1 in May) is exactly now: the next one is a week later.
    expect(first).toEqual({ created: true, changed: true, next: new Date('2026-05-11T08:00:00Z') });
    const sk = shardKeys(prefix, shardOf('reports.weekly:user-42'));
    const before = await t.redis.hget(sk.defs, 'reports.weekly:user-42');
    const again = await store.upsert('reports.weekly:user-42', { ...weekly, data: { userId: 'u42' } });
    expect(again).toEqual({ created: false, changed: false, next: first.next });
    expect(await t.redis.hget(sk.defs, 'reports.weekly:user-42')).toBe(before);
    const view = await store.get('reports.weekly:user-42');
    expect(view).toMatchObject({ id: 'reports.weekly:user-42', source: 'runtime', job: 'reports.weekly', queue: 'reports', pattern: '0 9 * * 1', tz: 'Europe/Lisbon', data: { userId: 'u42' }, version: 1, historyCap: 5, watch: false, paused: null, next: first.next?.toISOString() });
  });

  it('a changed definition bumps the version and moves the next occurrence to the new rule', async () => {
    const { store } = setup();
    await store.upsert('s', weekly);
    const changed = await store.upsert('s', { ...weekly, pattern: '0 10 * * *' });
    expect(changed.changed).toBe(true);
    expect(changed.next?.toISOString()).toBe('2026-05-04T09:00:00.000Z'); // 10:00 Lisbon (UTC+1) today
    expect((await store.get('s'))?.version).toBe(2);
  });
});

describe('pause, resume, remove, runNow', () => {
  it('pause and resume answer false when there is nothing to do; unknown ids throw', async () => {
    const { store } = setup();
    await store.upsert('p', weekly);
    expect(await store.pause('p', 'customer asked')).toBe(true);
    expect(await store.pause('p', 'again')).toBe(false);
    expect((await store.get('p'))?.paused).toEqual({ reason: 'customer asked', at: new Date(T0).toISOString() });
    expect(await store.resume('p')).toBe(true);
    expect(await store.resume('p')).toBe(false);
    await expect(store.pause('nope', 'x')).rejects.toBeInstanceOf(ScheduleNotFoundError);
    await expect(store.remove('nightly')).resolves.toBe(false); // not reconciled into this store yet
  });

  it('runNow enqueues one manual run with its own key and leaves the next occurrence alone', async () => {
    const { store, queues, prefix } = setup();
    const { next } = await store.upsert('reports.weekly:u:1', weekly);
    const a = await store.runNow('reports.weekly:u:1', { by: 'ops' });
    const b = await store.runNow('reports.weekly:u:1');
    expect(a.jobId).not.toBe(b.jobId);
    expect(a.jobId.startsWith('reports.weekly%3Au%3A1@manual-')).toBe(true);
    expect(a.occurrence.startsWith('reports.weekly:u:1@manual-')).toBe(true);
    const job = await queues.get('reports').getJob(a.jobId);
    expect(job?.data).toEqual({ userId: 'u42' });
    expect(job?.opts.delay ?? 0).toBe(0);
    expect((await store.get('reports.weekly:u:1'))?.next).toBe(next?.toISOString());
    const history = await readHistory(t.redis, prefix, 'reports.weekly:u:1');
    expect(history.find((r) => r.id === a.occurrence)).toMatchObject({ trigger: 'manual', jobId: a.jobId, by: 'ops' });
  });

  it('remove deletes the definition and its index entries; a second remove answers false', async () => {
    const { store } = setup();
    await store.upsert('r', weekly);
    expect(await store.remove('r')).toBe(true);
    expect(await store.get('r')).toBeNull();
    expect(await store.remove('r')).toBe(false);
    expect(await store.count()).toBe(0);
    expect((await store.list()).items).toEqual([]);
  });
});

describe('list and count', () => {
  it('pages by id across shards, filtered by prefix and job, and counts from the indexes', async () => {
    const { store } = setup();
    const ids = Array.from({ length: 60 }, (_, i) => `tenant-${String(i).padStart(2, '0')}`);
    for (const id of ids) await store.upsert(id, { ...weekly, data: { userId: id } });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await store.list({ limit: 7, cursor });
      expect(page.items.length).toBeLessThanOrEqual(7);
      seen.push(...page.items.map((i) => i.id));
      cursor = page.cursor;
    } while (cursor);
    expect(seen).toEqual(ids);
    expect((await store.list({ prefix: 'tenant-1', limit: 500 })).items.map((i) => i.id)).toEqual(ids.slice(10, 20));
    expect((await store.list({ job: 'reports.weekly', limit: 3 })).items.map((i) => i.id)).toEqual(ids.slice(0, 3));
    expect((await store.list({ job: 'nightly' })).items).toEqual([]);
    expect(await store.count()).toBe(60);
    expect(await store.count({ job: 'reports.weekly' })).toBe(60);
    expect(await store.count({ source: 'runtime' })).toBe(60);
    expect(await store.count({ source: 'catalog' })).toBe(0);
  });

  it('pages through 100,000 schedules by cursor, 500 at a time, each id once and in order', async () => {
    const { store, prefix } = setup();
    const N = 100_000;
    const id = (i: number) => `u${String(i).padStart(6, '0')}`;
    // Seeded with the store's own write script (as upsert writes), in pipelined batches: the API's upsert is
    // exercised above; here the subject is listing.
    const core = encodeCore({ j: 'reports.weekly', p: '0 9 * * 1', z: 'UTC', d: { userId: 'x' } });
    for (let i = 0; i < N; i += 5000) {
      await runScriptMany(
        t.redis,
        SET_DEF,
        Array.from({ length: 5000 }, (_, j) => {
          const sid = id(i + j);
          const k = shardKeys(prefix, shardOf(sid));
          const h = historyKeysOf(prefix, sid);
          const job = jobIndexKey(prefix, shardOf(sid), 'reports.weekly');
          return { keys: [k.defs, k.due, k.claimed, k.inflight, k.ids, job, job, h.history, h.records, h.lastSuccess, h.lastFailure], argv: [sid, '', encodeDef(core, [1, T0, T0]), T0 + 3600_000, '0'] };
        }),
      );
    }
    expect(await store.count()).toBe(N);
    let cursor: string | null = null;
    let previous = '';
    let total = 0;
    let pages = 0;
    do {
      const page: ListPage = await store.list({ limit: 500, cursor });
      expect(page.items.length).toBeLessThanOrEqual(500);
      for (const item of page.items) {
        expect(item.id > previous).toBe(true);
        previous = item.id;
      }
      total += page.items.length;
      pages++;
      cursor = page.cursor;
    } while (cursor);
    expect({ total, pages, last: previous }).toEqual({ total: N, pages: N / 500, last: id(N - 1) });
    const filtered = await store.list({ prefix: 'u09999', job: 'reports.weekly', limit: 500 });
    expect(filtered.items.map((i) => i.id)).toEqual(Array.from({ length: 10 }, (_, j) => id(99_990 + j)));
    expect(filtered.cursor).toBeNull();
  }, 120_000);
});
