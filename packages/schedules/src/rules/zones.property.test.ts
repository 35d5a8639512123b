import { describe, expect, it } from 'vitest';
import { ZONE_CASES, type ZoneCase } from './zones-check/cases.js';
import { addTotals, checkAround, emptyTotals, scanZone, transitionsBetween, type ZoneTotals } from './zones-check/compare.js';

/**
 * The engine against the Intl-only reference (zones-check/), on a sample that runs in `pnpm test` in a few
 * seconds: every offset change near the dates the zone check once found wrong, and a seeded draw of zones,
 * years and cases. `pnpm bench:zones` runs every zone and change from 1969 to 2100.
 */

const DAY_MS = 86_400_000;

/** Zones and dates of the hard changes: folds across midnight, gaps to midnight, skipped dates, odd sizes. */
const TROUBLE: ReadonlyArray<[zone: string, date: string, why: string]> = [
  ['America/St_Johns', '1991-10-27', 'fold across midnight (00:01 -> 23:01)'],
  ['America/Goose_Bay', '2000-10-29', 'fold across midnight'],
  ['America/Moncton', '2005-10-30', 'fold across midnight'],
  ['Antarctica/Casey', '2010-03-05', '3-hour fold across midnight'],
  ['America/Godthab', '2024-03-30', 'Nuuk: gap from 23:00 to midnight'],
  ['America/Scoresbysund', '2025-03-30', 'gap to midnight'],
  ['Pacific/Apia', '2011-12-30', 'the whole date skipped'],
  ['Pacific/Kiritimati', '1994-12-31', 'the whole date skipped'],
  ['Pacific/Kwajalein', '1969-09-30', '23-hour fold'],
  ['Pacific/Kwajalein', '1993-08-21', 'the whole date skipped'],
  ['Australia/Lord_Howe', '2026-04-05', '30-minute fold'],
  ['Australia/Lord_Howe', '2026-10-04', '30-minute gap'],
  ['Pacific/Rarotonga', '1978-11-12', '30-minute gap'],
  ['Asia/Katmandu', '1986-01-01', '15-minute gap at midnight'],
  ['Africa/Monrovia', '1972-01-07', '44.5-minute gap'],
  ['America/Caracas', '2007-12-09', '30-minute fold'],
  ['America/Caracas', '2016-05-01', '30-minute gap'],
  ['America/Havana', '2026-03-08', 'gap at midnight'],
  ['America/Santiago', '2026-04-05', 'fold at midnight'],
  ['America/New_York', '2026-03-08', 'the usual spring forward'],
  ['America/New_York', '2026-11-01', 'the usual fall back'],
];

/** A small seeded generator (mulberry32): the same draw on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function checkSpan(zone: string, from: number, to: number, cases: readonly ZoneCase[], quiet: boolean): { totals: ZoneTotals; changes: number } {
  const tl = scanZone(zone, from - 10 * DAY_MS, to + 10 * DAY_MS);
  const totals = emptyTotals();
  const changes = transitionsBetween(tl, from, to);
  // With `quiet`, an instant without a change too, so a zone without changes in the span is still compared.
  const offset = tl.zone.offsetMs(from);
  const windows = quiet ? [...changes, { at: from, before: offset, after: offset }] : changes;
  for (const tr of windows) addTotals(totals, checkAround(tl, tr, cases, { verify: true }));
  return { totals, changes: changes.length };
}

/** The bench's daily and longer cases, its `every` cases, and a few of its sub-hourly and hourly ones. */
const SHORT = ['*/15 * * * *', '7,37 * * * *', '0 */15 * * * *', '0 * * * *', '30 * * * *', '0 */2 * * *', '0 20-23,0-3 * * *', '45 23,0 * * *', '0,30 22-23,0-2 * * *'];
const SAMPLE_CASES = ZONE_CASES.filter((c) => c.pattern === undefined || c.reachMs > 8 * 3_600_000 || SHORT.includes(c.pattern));

const report = (t: ZoneTotals) => ({ disagreements: t.disagreements, dailyBreaks: t.dailyBreaks, referenceMisfits: t.referenceMisfits, samples: t.samples });

describe('occurrences in every zone: the engine agrees with an Intl-only reference (sample; pnpm bench:zones runs all)', () => {
  it.each(TROUBLE)('%s around %s (%s): every sample case under every DST policy', (zone, date) => {
    const at = Date.parse(`${date}T00:00:00Z`);
    const { totals, changes } = checkSpan(zone, at - 3 * DAY_MS, at + 3 * DAY_MS, SAMPLE_CASES, false);
    expect(changes).toBeGreaterThan(0);
    expect(report(totals)).toEqual({ disagreements: 0, dailyBreaks: 0, referenceMisfits: 0, samples: [] });
  });

  it('a seeded draw of zones, years and cases', () => {
    const random = seeded(37);
    const zones = Intl.supportedValuesOf('timeZone');
    const all = emptyTotals();
    let changes = 0;
    for (let i = 0; i < 12; i++) {
      const zone = zones[Math.floor(random() * zones.length)] as string;
      const year = 1969 + Math.floor(random() * 132);
      const cases = Array.from({ length: 12 }, () => ZONE_CASES[Math.floor(random() * ZONE_CASES.length)] as ZoneCase);
      const result = checkSpan(zone, Date.UTC(year, 0, 1), Date.UTC(year + 1, 0, 1), cases, true);
      addTotals(all, result.totals);
      changes += result.changes;
    }
    expect(all.windows).toBeGreaterThan(0);
    expect(changes).toBeGreaterThan(10);
    expect(report(all)).toEqual({ disagreements: 0, dailyBreaks: 0, referenceMisfits: 0, samples: [] });
  });
});
