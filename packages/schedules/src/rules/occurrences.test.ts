import { describe, expect, it } from 'vitest';
import type { DstPolicy } from '@tickwork/core';
import { nextOccurrences, occurrencesBetween, previousOccurrences, ruleOf, type OccurrenceRule } from './occurrences.js';

const cron = (pattern: string, tz: string, dst: Partial<DstPolicy> = {}): OccurrenceRule =>
  ruleOf('test', { pattern, tz, dst });
const between = (rule: OccurrenceRule, from: string, to: string) =>
  occurrencesBetween(rule, new Date(from), new Date(to)).occurrences.map((o) => o.at.toISOString());
const kinds = (rule: OccurrenceRule, from: string, to: string) =>
  occurrencesBetween(rule, new Date(from), new Date(to)).occurrences.map((o) => `${o.at.toISOString()} ${o.kind}`);
const gapsMinutes = (isos: string[]) =>
  isos.slice(1).map((iso, i) => (Date.parse(iso) - Date.parse(isos[i] ?? iso)) / 60_000);

const POLICIES: DstPolicy[] = [
  { gap: 'shift', fold: 'once' },
  { gap: 'shift', fold: 'twice' },
  { gap: 'skip', fold: 'once' },
  { gap: 'skip', fold: 'twice' },
];

describe('America/New_York (2026: spring forward Mar 8 02:00->03:00, fall back Nov 1 02:00->01:00)', () => {
  const tz = 'America/New_York';

  it('daily 02:30 in the gap: shift runs at 03:30 EDT, skip does not run that day', () => {
    expect(kinds(cron('30 2 * * *', tz, { gap: 'shift' }), '2026-03-07T00:00Z', '2026-03-10T00:00Z')).toEqual([
      '2026-03-07T07:30:00.000Z regular', // 02:30 EST
      '2026-03-08T07:30:00.000Z gap-shifted', // 03:30 EDT
      '2026-03-09T06:30:00.000Z regular', // 02:30 EDT
    ]);
    expect(between(cron('30 2 * * *', tz, { gap: 'skip' }), '2026-03-07T00:00Z', '2026-03-10T00:00Z')).toEqual([
      '2026-03-07T07:30:00.000Z',
      '2026-03-09T06:30:00.000Z',
    ]);
  });

  it('daily 01:30 in the fold: once runs at the first (EDT) 01:30, twice at both', () => {
    expect(kinds(cron('30 1 * * *', tz, { fold: 'once' }), '2026-10-31T00:00Z', '2026-11-03T00:00Z')).toEqual([
      '2026-10-31T05:30:00.000Z regular',
      '2026-11-01T05:30:00.000Z fold-first', // 01:30 EDT
      '2026-11-02T06:30:00.000Z regular', // 01:30 EST
    ]);
    expect(kinds(cron('30 1 * * *', tz, { fold: 'twice' }), '2026-10-31T00:00Z', '2026-11-03T00:00Z')).toEqual([
      '2026-10-31T05:30:00.000Z regular',
      '2026-11-01T05:30:00.000Z fold-first',
      '2026-11-01T06:30:00.000Z fold-second', // 01:30 EST
      '2026-11-02T06:30:00.000Z regular',
    ]);
  });

  it('a daily time away from the transition runs once a day under every policy', () => {
    for (const dst of POLICIES) {
      const isos = between(cron('0 8 * * *', tz, dst), '2026-03-06T00:00Z', '2026-03-10T00:00Z');
      expect(isos).toEqual([
        '2026-03-06T13:00:00.000Z',
        '2026-03-07T13:00:00.000Z',
        '2026-03-08T12:00:00.000Z',
        '2026-03-09T12:00:00.000Z',
      ]);
    }
  });

  it('hourly keeps one-hour spacing through both transitions under every policy', () => {
    for (const dst of POLICIES) {
      const spring = between(cron('0 * * * *', tz, dst), '2026-03-08T04:30Z', '2026-03-08T09:00Z');
      expect(spring).toEqual([
        '2026-03-08T05:00:00.000Z', // 00:00 EST
        '2026-03-08T06:00:00.000Z', // 01:00 EST
        '2026-03-08T07:00:00.000Z', // 03:00 EDT (02:00 does not exist)
        '2026-03-08T08:00:00.000Z',
        '2026-03-08T09:00:00.000Z',
      ]);
      const fall = between(cron('0 * * * *', tz, dst), '2026-11-01T03:30Z', '2026-11-01T08:00Z');
      expect(fall).toEqual([
        '2026-11-01T04:00:00.000Z', // 00:00 EDT
        '2026-11-01T05:00:00.000Z', // 01:00 EDT
        '2026-11-01T06:00:00.000Z', // 01:00 EST
        '2026-11-01T07:00:00.000Z', // 02:00 EST
        '2026-11-01T08:00:00.000Z',
      ]);
    }
  });

  it('every 15 minutes keeps 15-minute spacing across both transition days under every policy', () => {
    for (const dst of POLICIES) {
      for (const [from, to] of [
        ['2026-03-07T12:00Z', '2026-03-09T12:00Z'],
        ['2026-10-31T12:00Z', '2026-11-02T12:00Z'],
      ] as const) {
        const isos = between(cron('*/15 * * * *', tz, dst), from, to);
        expect(isos).toHaveLength(48 * 4);
        expect(new Set(gapsMinutes(isos))).toEqual(new Set([15]));
      }
    }
  });
});

describe('Europe/Berlin (2026: spring forward Mar 29 02:00->03:00, fall back Oct 25 03:00->02:00)', () => {
  const tz = 'Europe/Berlin';

  it('daily 02:30 on spring-forward day: shift -> 03:30 CEST, skip -> nothing', () => {
    expect(between(cron('30 2 * * *', tz, { gap: 'shift' }), '2026-03-28T00:00Z', '2026-03-31T00:00Z')).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:30:00.000Z', // 03:30 CEST
      '2026-03-30T00:30:00.000Z',
    ]);
    expect(between(cron('30 2 * * *', tz, { gap: 'skip' }), '2026-03-28T00:00Z', '2026-03-31T00:00Z')).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-30T00:30:00.000Z',
    ]);
  });

  it('daily 02:30 on fall-back day: once -> 02:30 CEST, twice -> both', () => {
    expect(between(cron('30 2 * * *', tz, { fold: 'once' }), '2026-10-24T12:00Z', '2026-10-26T12:00Z')).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-26T01:30:00.000Z',
    ]);
    expect(between(cron('30 2 * * *', tz, { fold: 'twice' }), '2026-10-24T12:00Z', '2026-10-26T12:00Z')).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T01:30:00.000Z',
      '2026-10-26T01:30:00.000Z',
    ]);
  });

  it('hourly and every-15-minutes keep their real-time spacing under every policy', () => {
    for (const dst of POLICIES) {
      for (const [from, to] of [
        ['2026-03-28T12:00Z', '2026-03-30T12:00Z'],
        ['2026-10-24T12:00Z', '2026-10-26T12:00Z'],
      ] as const) {
        const hourly = between(cron('0 * * * *', tz, dst), from, to);
        expect(hourly).toHaveLength(48);
        expect(new Set(gapsMinutes(hourly))).toEqual(new Set([60]));
        const quarter = between(cron('*/15 * * * *', tz, dst), from, to);
        expect(quarter).toHaveLength(192);
        expect(new Set(gapsMinutes(quarter))).toEqual(new Set([15]));
      }
    }
  });
});

describe('Australia/Lord_Howe (30-minute DST: Oct 4 2026 02:00->02:30, Apr 5 2026 02:00->01:30)', () => {
  const tz = 'Australia/Lord_Howe';

  it('daily 02:15 in the half-hour gap: shift -> 02:45 (+11), skip -> nothing', () => {
    expect(kinds(cron('15 2 * * *', tz, { gap: 'shift' }), '2026-10-02T00:00Z', '2026-10-05T00:00Z')).toEqual([
      '2026-10-02T15:45:00.000Z regular', // Oct 3 02:15 +10:30
      '2026-10-03T15:45:00.000Z gap-shifted', // Oct 4 02:45 +11
      '2026-10-04T15:15:00.000Z regular', // Oct 5 02:15 +11
    ]);
    expect(between(cron('15 2 * * *', tz, { gap: 'skip' }), '2026-10-02T00:00Z', '2026-10-05T00:00Z')).toEqual([
      '2026-10-02T15:45:00.000Z',
      '2026-10-04T15:15:00.000Z',
    ]);
  });

  it('daily 01:45 in the half-hour fold: once -> 01:45 (+11), twice -> both', () => {
    expect(between(cron('45 1 * * *', tz, { fold: 'once' }), '2026-04-03T12:00Z', '2026-04-05T12:00Z')).toEqual([
      '2026-04-03T14:45:00.000Z', // Apr 4 01:45 +11
      '2026-04-04T14:45:00.000Z', // Apr 5 01:45 +11
    ]);
    expect(between(cron('45 1 * * *', tz, { fold: 'twice' }), '2026-04-03T12:00Z', '2026-04-05T12:00Z')).toEqual([
      '2026-04-03T14:45:00.000Z',
      '2026-04-04T14:45:00.000Z',
      '2026-04-04T15:15:00.000Z', // Apr 5 01:45 +10:30
    ]);
  });

  it('every 15 minutes keeps 15-minute spacing through both half-hour transitions', () => {
    for (const dst of POLICIES) {
      for (const [from, to] of [
        ['2026-10-03T00:00Z', '2026-10-05T00:00Z'],
        ['2026-04-04T00:00Z', '2026-04-06T00:00Z'],
      ] as const) {
        const isos = between(cron('*/15 * * * *', tz, dst), from, to);
        expect(isos).toHaveLength(192);
        expect(new Set(gapsMinutes(isos))).toEqual(new Set([15]));
      }
    }
  });

  it('hourly on the local hour: one 90-minute interval on each transition day (documented), never a double run', () => {
    for (const dst of POLICIES) {
      const spring = between(cron('0 * * * *', tz, dst), '2026-10-03T12:00Z', '2026-10-04T12:00Z');
      expect(gapsMinutes(spring).filter((m) => m !== 60)).toEqual([90]);
      expect(spring).toContain('2026-10-03T14:30:00.000Z'); // 01:00 +10:30
      expect(spring).toContain('2026-10-03T16:00:00.000Z'); // 03:00 +11
      const fall = between(cron('0 * * * *', tz, dst), '2026-04-04T06:00Z', '2026-04-05T06:00Z');
      expect(gapsMinutes(fall).filter((m) => m !== 60)).toEqual([90]);
    }
  });
});

describe('engine basics', () => {
  it('every intervals other than whole days are anchored at the epoch and ignore DST', () => {
    const rule = ruleOf('t', { every: { hours: 1 }, tz: 'America/New_York' });
    const isos = nextOccurrences(rule, new Date('2026-03-08T04:10Z'), 5).map((o) => o.at.toISOString());
    expect(isos).toEqual([
      '2026-03-08T05:00:00.000Z',
      '2026-03-08T06:00:00.000Z',
      '2026-03-08T07:00:00.000Z',
      '2026-03-08T08:00:00.000Z',
      '2026-03-08T09:00:00.000Z',
    ]);
  });

  it('next is strictly after, previous strictly before', () => {
    const rule = cron('0 0 1 * *', 'UTC');
    expect(nextOccurrences(rule, new Date('2026-01-01T00:00Z'), 2).map((o) => o.at.toISOString())).toEqual([
      '2026-02-01T00:00:00.000Z',
      '2026-03-01T00:00:00.000Z',
    ]);
    expect(previousOccurrences(rule, new Date('2026-03-01T00:00Z'), 2).map((o) => o.at.toISOString())).toEqual([
      '2026-01-01T00:00:00.000Z',
      '2026-02-01T00:00:00.000Z',
    ]);
  });

  it('previous finds a yearly occurrence far back', () => {
    const rule = cron('0 12 29 2 *', 'Europe/Berlin');
    expect(previousOccurrences(rule, new Date('2027-01-01T00:00Z'), 1).map((o) => o.at.toISOString())).toEqual([
      '2024-02-29T11:00:00.000Z',
    ]);
  });

  it('supports seconds, day-of-week and last-day-of-month fields', () => {
    expect(
      nextOccurrences(cron('*/20 0 9 * * 1-5', 'UTC'), new Date('2026-01-02T09:00:30Z'), 3).map((o) => o.at.toISOString()),
    ).toEqual(['2026-01-02T09:00:40.000Z', '2026-01-05T09:00:00.000Z', '2026-01-05T09:00:20.000Z']);
    expect(nextOccurrences(cron('0 18 L * *', 'America/New_York'), new Date('2026-02-01T00:00Z'), 2).map((o) => o.at.toISOString())).toEqual([
      '2026-02-28T23:00:00.000Z',
      '2026-03-31T22:00:00.000Z',
    ]);
  });

  it('occurrencesBetween reports truncation at its limit', () => {
    const result = occurrencesBetween(cron('* * * * *', 'UTC'), new Date('2026-01-01T00:00Z'), new Date('2026-01-01T01:00Z'), 10);
    expect(result.occurrences).toHaveLength(10);
    expect(result.truncated).toBe(true);
  });
});
