import { describe, expect, it } from 'vitest';
import { planOccurrences, type PlanInput } from './catch-up.js';
import { ruleOf } from './occurrences.js';

const T0 = Date.parse('2026-05-01T00:00:00Z');
const MIN = 60_000;
const base: PlanInput = {
  rule: ruleOf('t', { pattern: '* * * * *', tz: 'UTC' }),
  policies: { missed: 'skip', catchUpWindowMs: 5 * MIN, maxCatchUp: 10 },
  cursor: T0,
  now: T0 + 10 * MIN + 30_000,
  graceMs: 10_000,
  lookaheadMs: 0,
};
const summary = (input: PlanInput) =>
  planOccurrences(input).items.map((i) => `${(i.at.getTime() - T0) / MIN}:${i.action}`);

describe('planOccurrences (outage of 10 one-minute occurrences, window 5 minutes)', () => {
  it('skip records every past-due occurrence as missed', () => {
    expect(summary(base)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((m) => `${m}:missed`));
  });

  it('once catches up only the latest and records the rest as missed', () => {
    expect(summary({ ...base, policies: { ...base.policies, missed: 'once' } })).toEqual([
      ...[1, 2, 3, 4, 5, 6, 7, 8, 9].map((m) => `${m}:missed`),
      '10:catch-up',
    ]);
  });

  it('all catches up the latest maxCatchUp inside the window', () => {
    expect(summary({ ...base, policies: { ...base.policies, missed: 'all', maxCatchUp: 2 } })).toEqual([
      ...[1, 2, 3, 4, 5, 6, 7, 8].map((m) => `${m}:missed`),
      '9:catch-up',
      '10:catch-up',
    ]);
    expect(summary({ ...base, policies: { ...base.policies, missed: 'all', maxCatchUp: 100 } })).toEqual([
      ...[1, 2, 3, 4, 5].map((m) => `${m}:missed`),
      ...[6, 7, 8, 9, 10].map((m) => `${m}:catch-up`),
    ]);
  });

  it('once with nothing inside the window catches up nothing', () => {
    expect(summary({ ...base, policies: { ...base.policies, missed: 'once', catchUpWindowMs: 10_000 } })).toEqual(
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((m) => `${m}:missed`),
    );
  });

  it('a slightly late occurrence (within grace) and the look-ahead are enqueued as normal runs', () => {
    const plan = planOccurrences({ ...base, cursor: T0 + 9 * MIN, now: T0 + 10 * MIN + 5000, lookaheadMs: 2 * MIN });
    expect(plan.items.map((i) => `${(i.at.getTime() - T0) / MIN}:${i.action}`)).toEqual(['10:enqueue', '11:enqueue', '12:enqueue']);
    expect(plan.cursor).toBe(T0 + 12 * MIN);
  });

  it('leaves the cursor alone when nothing is due and reports truncation', () => {
    const idle = planOccurrences({ ...base, cursor: base.now });
    expect(idle.items).toEqual([]);
    expect(idle.cursor).toBe(base.now);
    const long = planOccurrences({ ...base, limit: 4 });
    expect(long.truncated).toBe(true);
    expect(long.cursor).toBe(T0 + 4 * MIN);
    // A truncated batch that reaches into the window settles only what is older than the window, so the
    // latest occurrence (planned next time) still gets caught up.
    const once = { ...base, policies: { ...base.policies, missed: 'once' as const } };
    const first = planOccurrences({ ...once, limit: 7 });
    expect(first.items.map((i) => i.action)).toEqual(['missed', 'missed', 'missed', 'missed', 'missed']);
    const rest = planOccurrences({ ...once, cursor: first.cursor, limit: 7 });
    expect(rest.items.map((i) => `${(i.at.getTime() - T0) / MIN}:${i.action}`)).toEqual([
      '6:missed', '7:missed', '8:missed', '9:missed', '10:catch-up',
    ]);
  });
});

describe('planOccurrences of a claim taken over from a dead replica (supersede)', () => {
  // An every-second schedule whose claimer died holding its claim for second 1; another replica takes the
  // claim over at second 4.3 (look-ahead 1 s), within the grace period of every occurrence since.
  const S = 1000;
  const takeover: PlanInput = { ...base, rule: ruleOf('t', { pattern: '* * * * * *', tz: 'UTC' }), now: T0 + 4 * S + 300, graceMs: 60_000, lookaheadMs: 1000, supersede: true };
  const seconds = (input: PlanInput) => planOccurrences(input).items.map((i) => `${(i.at.getTime() - T0) / S}:${i.action}`);

  it('resumes with the next occurrence at its time; the ones due meanwhile are not added at once', () => {
    expect(seconds(takeover)).toEqual(['1:missed', '2:missed', '3:missed', '4:missed', '5:enqueue']);
    // Without supersede, every one of them is within the grace period: all added at once (a burst).
    expect(seconds({ ...takeover, supersede: false })).toEqual(['1:enqueue', '2:enqueue', '3:enqueue', '4:enqueue', '5:enqueue']);
  });

  it('runs the latest one due now when no later one is within the look-ahead', () => {
    // Every 2 s, taken over at 4.3: 2 and 4 came due, 6 is beyond the look-ahead; 4 runs now, 0.3 s late.
    const every2 = { ...takeover, rule: ruleOf('t', { every: { seconds: 2 }, tz: 'UTC' }) };
    expect(seconds(every2)).toEqual(['2:missed', '4:enqueue']);
    // A minutely schedule taken over seconds late: its one occurrence runs as usual.
    const minutely = { ...takeover, rule: ruleOf('t', { pattern: '* * * * *', tz: 'UTC' }), cursor: T0 + 59 * S, now: T0 + MIN + 4000 };
    expect(planOccurrences(minutely).items.map((i) => i.action)).toEqual(['enqueue']);
  });

  it('judges the superseded ones by the missed policy: once runs only the resuming one, all up to maxCatchUp in all', () => {
    expect(seconds({ ...takeover, policies: { ...takeover.policies, missed: 'once' } })).toEqual(['1:missed', '2:missed', '3:missed', '4:missed', '5:enqueue']);
    expect(seconds({ ...takeover, policies: { ...takeover.policies, missed: 'all', maxCatchUp: 3 } })).toEqual([
      '1:missed',
      '2:missed',
      '3:catch-up',
      '4:catch-up',
      '5:enqueue',
    ]);
  });

  it('changes nothing for a claim taken over after an outage longer than the grace period', () => {
    const outage = { ...base, supersede: true, policies: { ...base.policies, missed: 'once' as const } };
    expect(summary(outage)).toEqual(summary({ ...outage, supersede: false }));
    // An every-second schedule too, whose latest occurrences are within the grace whenever it is planned: the
    // scheduler and worker killed together for several seconds with the grace at 1.5 s (the scheduler's
    // process test), the claim of second 1 held by the dead scheduler or not, one outage, one catch-up.
    const killed = { ...takeover, policies: { ...takeover.policies, missed: 'once' as const }, cursor: T0 + S - 1, now: T0 + 9 * S + 300, graceMs: 1500, lookaheadMs: 0 };
    const restart = ['1:missed', '2:missed', '3:missed', '4:missed', '5:missed', '6:missed', '7:catch-up', '8:enqueue', '9:enqueue'];
    expect(seconds({ ...killed, supersede: false })).toEqual(restart);
    expect(seconds(killed)).toEqual(restart);
  });
});

describe('planOccurrences, plan after plan', () => {
  const S = 1000;
  const once: PlanInput = { ...base, rule: ruleOf('t', { pattern: '* * * * * *', tz: 'UTC' }), policies: { ...base.policies, missed: 'once' }, graceMs: 1500 };
  const plan = (cursor: number, now: number) => planOccurrences({ ...once, cursor, now }).items.map((i) => `${(i.at.getTime() - T0) / S}:${i.action}`);

  it('catches an outage up once; a scheduler that falls behind by more than the grace again later has an outage of its own', () => {
    // Back at 7.3 s after an outage from second 1: 5 caught up, 6 and 7 within the grace run as usual.
    expect(plan(T0, T0 + 7300)).toEqual(['1:missed', '2:missed', '3:missed', '4:missed', '5:catch-up', '6:enqueue', '7:enqueue']);
    // The next tick, on time: nothing of that outage is left to catch up.
    expect(plan(T0 + 7 * S, T0 + 8100)).toEqual(['8:enqueue']);
    // Stalled 2.6 s after that (a loaded machine, with a grace this short): 9 is late by more than the grace.
    expect(plan(T0 + 8 * S, T0 + 10_700)).toEqual(['9:catch-up', '10:enqueue']);
  });
});
