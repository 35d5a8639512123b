import { describe, expect, it } from 'vitest';
import { decideLateRun, type LateRunInput } from './late-run.js';
import { ruleOf } from './occurrences.js';
import type { MissedPolicy } from '@tickwork/core';

const T0 = Date.parse('2026-05-01T00:00:00Z');
const MIN = 60_000;
// Workers were down for the ten one-minute occurrences T0+1..T0+10; they are back at T0+10m30s.
const NOW = T0 + 10 * MIN + 30_000;
const base: LateRunInput = {
  rule: ruleOf('t', { pattern: '* * * * *', tz: 'UTC' }),
  policies: { missed: 'skip', catchUpWindowMs: 24 * 60 * MIN, maxCatchUp: 10 },
  nominal: T0 + MIN,
  now: NOW,
  graceMs: 10_000,
};
const withPolicy = (missed: MissedPolicy, extra: Partial<LateRunInput['policies']> = {}) => ({
  ...base,
  policies: { ...base.policies, missed, ...extra },
});
/** The decision for each queued occurrence T0+1..T0+10 minutes, as `minute:action`. */
const backlog = (input: LateRunInput) =>
  [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((m) => {
    const d = decideLateRun({ ...input, nominal: T0 + m * MIN });
    return `${m}:${d.action === 'missed' ? 'missed' : d.catchUp ? 'catch-up' : 'run'}`;
  });

describe('decideLateRun', () => {
  it('an occurrence started within the grace period runs as usual, whatever the policy', () => {
    for (const missed of ['skip', 'once', 'all'] as const) {
      expect(decideLateRun({ ...withPolicy(missed), nominal: NOW - 10_000 })).toEqual({ action: 'run', catchUp: false });
    }
  });

  it('skip: every late occurrence is missed, with a reason naming the policy', () => {
    expect(backlog(withPolicy('skip'))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((m) => `${m}:missed`));
    const d = decideLateRun(withPolicy('skip'));
    expect(d).toMatchObject({ action: 'missed', lateByMs: NOW - (T0 + MIN) });
    expect(d.action === 'missed' && d.reason).toMatch(/missed: 'skip'/);
  });

  it('once: only the latest due occurrence runs, as a catch-up', () => {
    expect(backlog(withPolicy('once'))).toEqual([...[1, 2, 3, 4, 5, 6, 7, 8, 9].map((m) => `${m}:missed`), '10:catch-up']);
    expect(decideLateRun({ ...withPolicy('once'), nominal: T0 + 10 * MIN })).toEqual({
      action: 'run',
      catchUp: true,
      lateByMs: 30_000,
      laterDue: 0,
    });
  });

  it('once: a late occurrence is missed when a later one is due, even if that one is still on time', () => {
    // 10:00 started 70 s late; 11:00 is due (10 s ago, inside the grace) and runs itself.
    const now = T0 + 11 * MIN + 10_000;
    expect(decideLateRun({ ...withPolicy('once'), nominal: T0 + 10 * MIN, now })).toMatchObject({ action: 'missed', laterDue: 1 });
  });

  it('all: the latest maxCatchUp due occurrences run, older ones are missed', () => {
    expect(backlog(withPolicy('all', { maxCatchUp: 3 }))).toEqual([
      ...[1, 2, 3, 4, 5, 6, 7].map((m) => `${m}:missed`),
      '8:catch-up',
      '9:catch-up',
      '10:catch-up',
    ]);
    expect(decideLateRun({ ...withPolicy('all', { maxCatchUp: 3 }), nominal: T0 + 7 * MIN })).toMatchObject({ action: 'missed', laterDue: 3 });
  });

  it('once and all: an occurrence older than catchUpWindow is missed', () => {
    const window = { catchUpWindowMs: 5 * MIN };
    expect(backlog(withPolicy('all', window))).toEqual([
      ...[1, 2, 3, 4, 5].map((m) => `${m}:missed`),
      ...[6, 7, 8, 9, 10].map((m) => `${m}:catch-up`),
    ]);
    // A daily job started 23 h late: nothing later is due yet, but it is outside a 12 h window.
    const daily: LateRunInput = {
      rule: ruleOf('d', { pattern: '0 3 * * *', tz: 'UTC' }),
      policies: { missed: 'once', catchUpWindowMs: 12 * 60 * MIN, maxCatchUp: 10 },
      nominal: Date.parse('2026-05-01T03:00:00Z'),
      now: Date.parse('2026-05-02T02:00:00Z'),
      graceMs: 60_000,
    };
    const d = decideLateRun(daily);
    expect(d).toMatchObject({ action: 'missed' });
    expect(d.action === 'missed' && d.reason).toMatch(/outside the catch-up window/);
    expect(decideLateRun({ ...daily, policies: { ...daily.policies, catchUpWindowMs: 48 * 60 * MIN } })).toMatchObject({ action: 'run', catchUp: true });
  });

  it('occurrences past the scheduler cursor are not counted as due (the scheduler has not dealt with them)', () => {
    // The scheduler stopped after enqueuing up to 10:00; workers return at 12:30. 10:00 is the latest the
    // workers will see, so it catches up; the scheduler judges 11:00 and 12:00 itself when it returns.
    const input = { ...withPolicy('once'), now: T0 + 12 * MIN + 30_000, scheduledUpTo: T0 + 10 * MIN };
    expect(decideLateRun({ ...input, nominal: T0 + 10 * MIN })).toMatchObject({ action: 'run', catchUp: true, laterDue: 0 });
    expect(decideLateRun({ ...input, nominal: T0 + 9 * MIN })).toMatchObject({ action: 'missed', laterDue: 1 });
    // With a look-ahead the cursor is ahead of now: now bounds what is due.
    expect(decideLateRun({ ...input, scheduledUpTo: T0 + 20 * MIN, nominal: T0 + 10 * MIN })).toMatchObject({ action: 'missed', laterDue: 1 });
  });
});
