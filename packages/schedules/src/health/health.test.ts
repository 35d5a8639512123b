import type { OccurrenceRecord } from '../history/history.js';
import type { OccurrenceRule } from '../rules/occurrences.js';
import { describe, expect, it } from 'vitest';
import { scheduleHealth } from './health.js';

const daily: OccurrenceRule = { kind: 'cron', pattern: '0 8 * * *', tz: 'UTC', dst: { gap: 'shift', fold: 'once' } };
const now = new Date('2026-05-10T12:00:00Z'); // last expected: 2026-05-10T08:00Z, interval 1 day

function rec(nominal: string, endedAt: string, error?: string): OccurrenceRecord {
  return { id: `x@${nominal}`, schedule: 'x', nominal, trigger: 'schedule', endedAt, ...(error && { error }) };
}

describe('scheduleHealth', () => {
  it('is ok when the last run succeeded, and names the last expected occurrence and the interval', () => {
    const h = scheduleHealth({ rule: daily, lastSuccess: rec('2026-05-10T08:00:00.000Z', '2026-05-10T08:00:05.000Z'), lastFailure: null, firstSeen: null, now });
    expect(h).toMatchObject({ status: 'ok', stale: false, failing: false, lastExpected: '2026-05-10T08:00:00.000Z', intervalMs: 86_400_000 });
  });

  it('is stale when no success happened within 2 intervals before the last expected occurrence', () => {
    const justInside = scheduleHealth({ rule: daily, lastSuccess: rec('2026-05-08T08:00:00.000Z', '2026-05-08T08:00:01.000Z'), lastFailure: null, firstSeen: null, now });
    expect(justInside.status).toBe('ok');
    const outside = scheduleHealth({ rule: daily, lastSuccess: rec('2026-05-07T08:00:00.000Z', '2026-05-08T07:59:59.000Z'), lastFailure: null, firstSeen: null, now });
    expect(outside).toMatchObject({ status: 'stale', stale: true, failing: false });
    expect(outside.reason).toContain('2026-05-08T07:59:59.000Z');
  });

  it('is failing when the latest outcome is a failure, with its error, even if also stale', () => {
    const h = scheduleHealth({
      rule: daily,
      lastSuccess: rec('2026-05-01T08:00:00.000Z', '2026-05-01T08:00:05.000Z'),
      lastFailure: rec('2026-05-10T08:00:00.000Z', '2026-05-10T08:01:00.000Z', 'db down'),
      firstSeen: null,
      now,
    });
    expect(h).toMatchObject({ status: 'failing', failing: true, stale: true });
    expect(h.reason).toContain('db down');
    const recovered = scheduleHealth({
      rule: daily,
      lastSuccess: rec('2026-05-10T08:00:00.000Z', '2026-05-10T08:02:00.000Z'),
      lastFailure: rec('2026-05-09T08:00:00.000Z', '2026-05-09T08:01:00.000Z', 'db down'),
      firstSeen: null,
      now,
    });
    expect(recovered.status).toBe('ok');
  });

  it('without any success: waiting while the schedule is young, stale once it has been seen for 2 intervals', () => {
    expect(scheduleHealth({ rule: daily, lastSuccess: null, lastFailure: null, firstSeen: null, now }).status).toBe('waiting');
    expect(scheduleHealth({ rule: daily, lastSuccess: null, lastFailure: null, firstSeen: '2026-05-09T08:00:00.000Z', now }).status).toBe('waiting');
    const old = scheduleHealth({ rule: daily, lastSuccess: null, lastFailure: null, firstSeen: '2026-05-01T08:00:00.000Z', now });
    expect(old).toMatchObject({ status: 'stale', stale: true });
  });

  it('measures `every` schedules in their interval', () => {
    const every: OccurrenceRule = { kind: 'every', everyMs: 30 * 60_000, tz: 'UTC' };
    const ok = scheduleHealth({ rule: every, lastSuccess: rec('2026-05-10T11:00:00.000Z', '2026-05-10T11:00:02.000Z'), lastFailure: null, firstSeen: null, now });
    expect(ok).toMatchObject({ status: 'ok', intervalMs: 1_800_000, lastExpected: '2026-05-10T11:30:00.000Z' });
    const stale = scheduleHealth({ rule: every, lastSuccess: rec('2026-05-10T10:00:00.000Z', '2026-05-10T10:00:02.000Z'), lastFailure: null, firstSeen: null, now });
    expect(stale.status).toBe('stale');
  });
});
