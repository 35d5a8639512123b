import { scheduledRunOf, spreadOffsetMs, type QueueSet, type ScheduleSpec } from '@tickwork/core';
import { previewSchedule, readHistory } from '@tickwork/schedules';
import { describe, expect, it } from 'vitest';
import { useRedisPerFile } from './testing/redis-per-file.js';
import { KINDS, scheduleOf } from './testing/store-fixture.js';

const t = useRedisPerFile();
const MIN = 60_000;
const T0 = Date.parse('2026-05-01T00:00:00Z');

const nominals = async (queues: QueueSet) =>
  (await queues.get('q').getJobs(['delayed', 'wait'], 0, -1)).map((j) => scheduledRunOf(j.opts)?.nominal ?? 0).sort((a, b) => a - b);

describe.each(KINDS)('a %s schedule with spread', (kind) => {
  it('enqueues each occurrence at its pattern time plus the id\'s offset, and says so in its view, preview and history', async () => {
    const spec = { pattern: '* * * * *', tz: 'UTC', spread: { seconds: 40 } } as ScheduleSpec;
    const s = await scheduleOf(t.redis, kind, spec, T0, { lookaheadMs: 2 * MIN });
    t.queueSets.push(s.queues);
    const offset = spreadOffsetMs(s.id, 40_000);
    // Pinned: the rule must never change under existing schedules (it would move everyone's run times).
    expect(offset).toBe(kind === 'catalog' ? 27_000 : 29_000);
    const view = await s.store.get(s.id);
    expect(view?.policies.spreadMs).toBe(40_000);
    expect(view?.spreadOffsetMs).toBe(offset);
    expect(view?.next).toBe(new Date(T0 + offset).toISOString());

    await s.dispatcher().tick(T0 + 1000); // look-ahead 2 min: the occurrences up to T0 + 121 s
    expect(await nominals(s.queues)).toEqual([T0 + offset, T0 + MIN + offset]);

    if (kind === 'catalog') {
      const preview = previewSchedule(s.catalog.require('minutely'), { from: new Date(T0), count: 2 });
      expect(preview.spreadOffsetMs).toBe(offset);
      expect(preview.next.map((o) => Date.parse(o.utc))).toEqual([T0 + offset, T0 + MIN + offset]);
    }
    // History records occurrences at their shifted times (here: one the scheduler found already past grace).
    await s.dispatcher().tick(T0 + 10 * MIN);
    const history = await readHistory(t.redis, s.prefix, s.id, 50);
    expect(history.length).toBeGreaterThan(0);
    for (const h of history) expect((Date.parse(h.nominal) - T0 - offset) % MIN).toBe(0);
  });
});
