import { describe, expect, it } from 'vitest';
import { policiesOf, spreadOffsetMs } from '@tickwork/core';
import { nextOccurrences, occurrencesBetween, ruleOf } from './occurrences.js';

const MIN = 60_000;
const WINDOW = 10 * MIN;

describe('spread offsets', () => {
  it('are whole seconds in [0, window), the same for an id every time, different across ids', () => {
    const a = spreadOffsetMs('reports.weekly:user-1', WINDOW);
    expect(a).toBe(306_000); // pinned: a changed rule would move every existing schedule's run times
    expect(spreadOffsetMs('reports.weekly:user-1', WINDOW)).toBe(a);
    expect(a % 1000).toBe(0);
    expect(a).toBeGreaterThanOrEqual(0);
    expect(a).toBeLessThan(WINDOW);
    expect(spreadOffsetMs('x', null)).toBe(0);
  });

  it('spread 100,000 ids over a 10-minute window evenly: each of the 10 minutes gets 10% +- 1%', () => {
    const perMinute = new Array<number>(10).fill(0);
    const ids = 100_000;
    for (let i = 0; i < ids; i++) {
      const m = Math.floor(spreadOffsetMs(`digest:user-${i}`, WINDOW) / MIN);
      perMinute[m] = (perMinute[m] ?? 0) + 1;
    }
    for (const count of perMinute) {
      expect(count).toBeGreaterThan(ids * 0.09);
      expect(count).toBeLessThan(ids * 0.11);
    }
  });

  it('moves every occurrence of the rule by the offset, keeping the spacing (cron and every, with DST)', () => {
    const id = 'digest:user-42';
    const spec = { pattern: '0 9 * * 1', tz: 'America/New_York', spread: { minutes: 10 } };
    const offset = spreadOffsetMs(id, policiesOf(id, spec).spreadMs);
    expect(offset).toBeGreaterThan(0);
    const plain = nextOccurrences(ruleOf(id, { pattern: '0 9 * * 1', tz: 'America/New_York' }), new Date('2026-03-01T00:00Z'), 4);
    const spread = nextOccurrences(ruleOf(id, spec), new Date('2026-03-01T00:00Z'), 4);
    // Mondays 09:00 local across the 2026-03-08 spring-forward, each fired `offset` later.
    expect(spread.map((o) => o.at.getTime())).toEqual(plain.map((o) => o.at.getTime() + offset));
    expect(spread.map((o) => o.kind)).toEqual(plain.map((o) => o.kind));

    const every = ruleOf(id, { every: { minutes: 5 }, tz: 'UTC', spread: { minutes: 2 } });
    const o2 = spreadOffsetMs(id, 2 * MIN);
    const from = Date.parse('2026-05-01T00:00:00Z');
    expect(occurrencesBetween(every, new Date(from), new Date(from + 15 * MIN)).occurrences.map((o) => o.at.getTime() - from)).toEqual(
      [0, 5, 10].map((m) => m * MIN + o2).filter((t) => t > 0 && t <= 15 * MIN),
    );
  });

  it('an occurrence after `after` is never one at or before it: the shifted time is what counts', () => {
    const id = 'digest:user-7';
    const rule = ruleOf(id, { pattern: '* * * * *', tz: 'UTC', spread: { seconds: 50 } });
    const offset = rule.offsetMs ?? 0;
    const t = Date.parse('2026-05-01T00:00:00Z') + offset; // exactly the shifted time of 00:00
    expect(nextOccurrences(rule, new Date(t), 1)[0]?.at.getTime()).toBe(t + MIN);
    expect(nextOccurrences(rule, new Date(t - 1), 1)[0]?.at.getTime()).toBe(t);
  });
});
