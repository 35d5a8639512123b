import { createLogger, occurrenceKey, type ScheduleSpec } from '@tickwork/core';
import { mergeOccurrence, runRecorder } from '@tickwork/schedules';
import type { Alert } from '@tickwork/operations';
import { describe, expect, it } from 'vitest';
import { useRedisPerFile } from './testing/redis-per-file.js';
import { scheduleOf } from './testing/store-fixture.js';
import { watchIndexed } from './watchdog-index.js';

const t = useRedisPerFile();
const queueSets = t.queueSets;
const log = createLogger('test', 'silent');
const MIN = 60_000;
const T0 = Date.parse('2026-05-01T00:00:00Z');


async function watched(watch: boolean) {
  const s = await scheduleOf(t.redis, 'runtime', { pattern: '* * * * *', tz: 'UTC', ...({ watch } as Partial<ScheduleSpec>) } as ScheduleSpec, T0);
  queueSets.push(s.queues);
  const alerts: Alert[] = [];
  const deps = { catalog: s.catalog, redis: t.redis, prefix: s.prefix, log, alerter: { scheduleHealth: (a: Alert) => void alerts.push(a) } };
  return { s, alerts, deps };
}

describe('indexed watchdog for runtime schedules (watch: true)', () => {
  it('alerts stale once across replicas, and recovered once after a success', async () => {
    const { s, alerts, deps } = await watched(true);
    await s.dispatcher().tick(T0 + MIN + 100);
    await Promise.all([watchIndexed(deps, new Date(T0 + 2 * MIN)), watchIndexed(deps, new Date(T0 + 2 * MIN))]);
    expect(alerts).toEqual([]); // too early to call it stale
    for (let m = 2; m <= 5; m++) await s.dispatcher().tick(T0 + m * MIN + 100);
    await Promise.all([watchIndexed(deps, new Date(T0 + 5 * MIN + 500)), watchIndexed(deps, new Date(T0 + 5 * MIN + 500))]);
    expect(alerts.map((a) => [a.type, 'schedule' in a && a.schedule])).toEqual([['schedule_stale', s.id]]);
    const id = occurrenceKey(s.id, new Date(T0 + 5 * MIN));
    await mergeOccurrence(t.redis, s.prefix, s.id, id, T0 + 5 * MIN, { outcome: 'completed', endedAt: new Date(T0 + 5 * MIN + 1000).toISOString() }, { id }, 'lastSuccess');
    await Promise.all([watchIndexed(deps, new Date(T0 + 5 * MIN + 2000)), watchIndexed(deps, new Date(T0 + 5 * MIN + 2000))]);
    expect(alerts.map((a) => a.type)).toEqual(['schedule_stale', 'schedule_recovered']);
  });

  it('alerts a run still going after slowAfter once, from the index of started runs', async () => {
    const { s, alerts, deps } = await watched(true);
    const rec = runRecorder(t.redis, s.prefix, s.catalog.require('minutely'), { id: 'j', name: 'minutely', data: {}, scheduled: { schedule: s.id, nominal: T0 + MIN, catchUp: false, v: 1, sa: 1000 } }, log);
    expect(await rec?.started(1)).toBe('ok');
    const later = new Date(Date.now() + 5000);
    await Promise.all([watchIndexed(deps, later), watchIndexed(deps, later)]);
    expect(alerts.map((a) => [a.type, 'occurrence' in a && a.occurrence])).toEqual([['schedule_slow_run', occurrenceKey(s.id, new Date(T0 + MIN))]]);
  });

  it('does not watch a runtime schedule that did not opt in', async () => {
    const { s, alerts, deps } = await watched(false);
    for (let m = 1; m <= 5; m++) await s.dispatcher().tick(T0 + m * MIN + 100);
    await watchIndexed(deps, new Date(T0 + 6 * MIN));
    expect(alerts).toEqual([]);
  });
});
