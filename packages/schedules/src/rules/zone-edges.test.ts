import { describe, expect, it } from 'vitest';
import type { DstPolicy } from '@tickwork/core';
import { occurrencesBetween, ruleOf, type OccurrenceRule } from './occurrences.js';

/**
 * The offset changes issue 37 §5 found handled wrongly, each pinned down: the instants and labels the
 * documented semantics give (docs/schedules.md, "DST policy"). zones.property.test.ts and `pnpm bench:zones`
 * compare the engine with an Intl-only reference everywhere else.
 */

const cron = (pattern: string, tz: string, dst: Partial<DstPolicy> = {}): OccurrenceRule => ruleOf('test', { pattern, tz, dst });
const kinds = (rule: OccurrenceRule, from: string, to: string) =>
  occurrencesBetween(rule, new Date(from), new Date(to)).occurrences.map((o) => `${o.at.toISOString()} ${o.kind}`);
const minutesApart = (rule: OccurrenceRule, from: string, to: string) => {
  const at = occurrencesBetween(rule, new Date(from), new Date(to)).occurrences.map((o) => o.at.getTime());
  return at.slice(1).map((t, i) => (t - (at[i] as number)) / 60_000);
};

describe('a fold across local midnight (St. Johns 1991-10-27: 00:01 NDT -> 23:01 NST)', () => {
  const tz = 'America/St_Johns';

  it('*/15 keeps both passes and 15-minute spacing: 02:30Z (00:00 NDT, the first midnight) is not dropped', () => {
    expect(kinds(cron('*/15 * * * *', tz), '1991-10-27T01:50Z', '1991-10-27T03:40Z')).toEqual([
      '1991-10-27T02:00:00.000Z fold-first', // Oct 26 23:30 NDT
      '1991-10-27T02:15:00.000Z fold-first', // 23:45 NDT
      '1991-10-27T02:30:00.000Z fold-first', // Oct 27 00:00 NDT
      '1991-10-27T02:45:00.000Z fold-second', // Oct 26 23:15 NST
      '1991-10-27T03:00:00.000Z fold-second',
      '1991-10-27T03:15:00.000Z fold-second',
      '1991-10-27T03:30:00.000Z fold-second', // Oct 27 00:00 NST
    ]);
  });

  it("fold: 'twice' on a multi-time pattern runs both passes of both dates, in time order", () => {
    expect(kinds(cron('0,30 0,23 * * *', tz, { fold: 'twice' }), '1991-10-26T20:00Z', '1991-10-27T05:00Z')).toEqual([
      '1991-10-27T01:30:00.000Z regular', // Oct 26 23:00 (before the fold starts at 23:01)
      '1991-10-27T02:00:00.000Z fold-first', // Oct 26 23:30 NDT
      '1991-10-27T02:30:00.000Z fold-first', // Oct 27 00:00 NDT
      '1991-10-27T03:00:00.000Z fold-second', // Oct 26 23:30 NST
      '1991-10-27T03:30:00.000Z fold-second', // Oct 27 00:00 NST
      '1991-10-27T04:00:00.000Z regular', // Oct 27 00:30 NST (00:30 NDT never was)
    ]);
  });

  it("a daily midnight job runs once, at the first midnight, with fold 'once'", () => {
    expect(kinds(cron('0 0 * * *', tz), '1991-10-25T12:00Z', '1991-10-28T12:00Z')).toEqual([
      '1991-10-26T02:30:00.000Z regular',
      '1991-10-27T02:30:00.000Z fold-first',
      '1991-10-28T03:30:00.000Z regular',
    ]);
  });
});

it('a 3-hour fold across midnight (Casey 2010-03-05: 02:00 +11 -> 23:00 +08): hourly has no hole', () => {
  const rule = cron('0 * * * *', 'Antarctica/Casey');
  expect(new Set(minutesApart(rule, '2010-03-04T08:00Z', '2010-03-04T22:00Z'))).toEqual(new Set([60]));
  expect(kinds(rule, '2010-03-04T11:30Z', '2010-03-04T18:00Z')).toEqual([
    '2010-03-04T12:00:00.000Z fold-first', // Mar 4 23:00 +11
    '2010-03-04T13:00:00.000Z fold-first', // Mar 5 00:00 +11
    '2010-03-04T14:00:00.000Z fold-first',
    '2010-03-04T15:00:00.000Z fold-second', // Mar 4 23:00 +08
    '2010-03-04T16:00:00.000Z fold-second', // Mar 5 00:00 +08
    '2010-03-04T17:00:00.000Z fold-second',
    '2010-03-04T18:00:00.000Z regular', // Mar 5 02:00 +08
  ]);
});

describe('a gap from 23:00 to midnight (Nuuk, Saturday 2024-03-30)', () => {
  const tz = 'America/Nuuk';

  it("a daily 23:30 runs on Saturday, one gap-length earlier (22:30 -02), and once on Sunday", () => {
    expect(kinds(cron('30 23 * * *', tz), '2024-03-29T00:00Z', '2024-04-02T00:00Z')).toEqual([
      '2024-03-29T01:30:00.000Z regular', // Thu 23:30 -02
      '2024-03-30T01:30:00.000Z regular', // Fri 23:30 -02
      '2024-03-31T00:30:00.000Z gap-shifted-back', // Sat 22:30 -02
      '2024-04-01T00:30:00.000Z regular', // Sun 23:30 -01
    ]);
  });

  it("gap: 'skip' leaves Saturday without a run", () => {
    expect(kinds(cron('30 23 * * *', tz, { gap: 'skip' }), '2024-03-29T00:00Z', '2024-04-02T00:00Z')).toEqual([
      '2024-03-29T01:30:00.000Z regular',
      '2024-03-30T01:30:00.000Z regular',
      '2024-04-01T00:30:00.000Z regular',
    ]);
  });
});

it('a skipped date (Apia 2011-12-30) has no run; the next midnight is regular', () => {
  expect(kinds(cron('0 0 * * *', 'Pacific/Apia'), '2011-12-28T00:00Z', '2012-01-01T00:00Z')).toEqual([
    '2011-12-28T10:00:00.000Z regular', // Dec 28 00:00 -10
    '2011-12-29T10:00:00.000Z regular', // Dec 29 00:00 -10
    '2011-12-30T10:00:00.000Z regular', // Dec 31 00:00 +14
    '2011-12-31T10:00:00.000Z regular', // Jan 1 00:00 +14
  ]);
  expect(kinds(cron('0 12 * * 5', 'Pacific/Apia'), '2011-12-20T00:00Z', '2012-01-10T00:00Z')).toEqual([
    '2011-12-23T22:00:00.000Z regular', // Friday Dec 23; Friday Dec 30 did not happen in Apia
    '2012-01-05T22:00:00.000Z regular', // Friday Jan 6 12:00 +14
  ]);
});

describe('every: whole days are local dates', () => {
  const every = (e: Record<string, number>, tz: string, from: string, to: string) =>
    occurrencesBetween(ruleOf('test', { every: e, tz }), new Date(from), new Date(to)).occurrences.map((o) => o.at.toISOString());

  it('{ days: 1 } runs at local midnight, through a DST change', () => {
    expect(every({ days: 1 }, 'America/New_York', '2026-03-06T12:00Z', '2026-03-10T12:00Z')).toEqual([
      '2026-03-07T05:00:00.000Z',
      '2026-03-08T05:00:00.000Z',
      '2026-03-09T04:00:00.000Z', // EDT from Mar 8
      '2026-03-10T04:00:00.000Z',
    ]);
    expect(every({ hours: 24 }, 'Europe/Berlin', '2026-03-28T12:00Z', '2026-03-30T12:00Z')).toEqual(['2026-03-28T23:00:00.000Z', '2026-03-29T22:00:00.000Z']);
  });

  it('{ days: 2 } counts dates from 1970-01-01 (every replica agrees), at local midnight', () => {
    expect(every({ days: 2 }, 'Asia/Kolkata', '2026-03-06T12:00Z', '2026-03-12T12:00Z')).toEqual([
      '2026-03-07T18:30:00.000Z', // Mar 8 00:00 +05:30: 20,520 days after 1970-01-01
      '2026-03-09T18:30:00.000Z',
      '2026-03-11T18:30:00.000Z',
    ]);
  });

  it('any other interval is real time from the epoch, whatever the zone', () => {
    // Multiples of 5 h from 1970-01-01T00:00Z: 2026-03-07T04:00Z is the 98,492nd.
    expect(every({ hours: 5 }, 'Asia/Kolkata', '2026-03-07T00:00Z', '2026-03-07T12:00Z')).toEqual(['2026-03-07T04:00:00.000Z', '2026-03-07T09:00:00.000Z']);
  });
});

it('offset changes that are not a whole hour give hourly patterns one longer or shorter interval', () => {
  const hourly = (tz: string, from: string, to: string) => minutesApart(cron('0 * * * *', tz), from, to).filter((m) => m !== 60);
  expect(hourly('America/Caracas', '2016-05-01T03:00Z', '2016-05-01T10:00Z')).toEqual([30]); // 30-minute gap, 02:30 -> 03:00
  expect(hourly('America/Caracas', '2007-12-09T03:00Z', '2007-12-09T10:00Z')).toEqual([90]); // 30-minute fold
  expect(hourly('Asia/Katmandu', '1985-12-31T14:00Z', '1985-12-31T22:00Z')).toEqual([105]); // 00:00 -> 00:15 skips the hour
  expect(hourly('Africa/Monrovia', '1972-01-06T20:00Z', '1972-01-07T04:00Z')).toEqual([75.5]); // 44.5-minute gap over 00:00
});
