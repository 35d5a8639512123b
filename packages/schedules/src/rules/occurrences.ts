import { CronExpressionParser, type CronFieldCollection } from 'cron-parser';
import { IANAZone } from 'luxon';
import type { DstPolicy, ScheduleSpec } from '@tickwork/core';
import { JobDefinitionError } from '@tickwork/core';
import { boundedCache } from '@tickwork/core';
import { DEFAULT_DST } from '@tickwork/core';
import { everyMs, policiesOf, spreadOffsetMs } from '@tickwork/core';
import { dayMatcher, type DayMatcher } from './cron-days.js';
import { localTimesAfter, type LocalDay, type LocalTimes, type Occurrence } from './local-times.js';
import { DAY_MS } from './zone-days.js';

/**
 * The one place tickwork decides when a schedule fires. Pure (no Redis, no clock): the scheduler, the
 * catch-up planner, the preview and the tests all call it, so they can never disagree.
 *
 * cron-parser only parses the pattern; the matching calendar dates follow its rules (cron-days.ts), and
 * local wall times become instants here with luxon's zone offsets (local-times.ts, zone-days.ts), so the
 * gap/fold policy is ours and per schedule. `pnpm bench:zones` holds all of it to an Intl-only reference
 * over every zone and every offset change from 1969 to 2100.
 */
export type OccurrenceRule = (
  | { kind: 'cron'; pattern: string; tz: string; dst: DstPolicy }
  /** `dst` applies to whole-day intervals only (they fire at local midnight); absent: the default. */
  | { kind: 'every'; everyMs: number; tz: string; dst?: DstPolicy }
) & {
  /**
   * The schedule's `spread` offset (spreadOffsetMs): every occurrence fires this long after its pattern
   * time. Applied here, so every caller (dispatch, catch-up, late runs, previews) sees the same instants.
   */
  offsetMs?: number;
};

export type { Occurrence, OccurrenceKind } from './local-times.js';

export function ruleOf(jobName: string, spec: ScheduleSpec): OccurrenceRule {
  const dst = { ...DEFAULT_DST, ...spec.dst };
  const offsetMs = spec.spread === undefined ? 0 : spreadOffsetMs(jobName, policiesOf(jobName, spec).spreadMs);
  const offset = offsetMs > 0 ? { offsetMs } : {};
  if (spec.pattern !== undefined) return { kind: 'cron', pattern: spec.pattern, tz: spec.tz, dst, ...offset };
  return { kind: 'every', everyMs: everyMs(jobName, spec), tz: spec.tz, dst, ...offset };
}

/**
 * Occurrences strictly after `after`, ascending, lazily (a schedule has no last occurrence). With `until`,
 * only those up to it are promised (past it, some may be missing): a bounded caller's hint.
 */
export function* occurrencesAfter(rule: OccurrenceRule, after: Date, until?: Date): Generator<Occurrence> {
  const offset = rule.offsetMs ?? 0;
  if (offset === 0) {
    yield* patternTimesAfter(rule, after, until);
    return;
  }
  // Spread: the pattern's times after (after - offset), each moved by the offset; order is kept.
  const shiftedUntil = until === undefined ? undefined : new Date(until.getTime() - offset);
  for (const o of patternTimesAfter(rule, new Date(after.getTime() - offset), shiftedUntil)) {
    yield { ...o, at: new Date(o.at.getTime() + offset) };
  }
}

/** The pattern's own times (no spread offset) strictly after `after`. */
function* patternTimesAfter(rule: OccurrenceRule, after: Date, until?: Date): Generator<Occurrence> {
  const untilMs = until?.getTime();
  if (rule.kind === 'cron') {
    yield* localTimesAfter(compileCron(rule), after.getTime(), untilMs);
    return;
  }
  // A whole number of days means dates in the schedule's zone ("every day" runs at local midnight, not at
  // UTC midnight); any other interval is real time.
  if (rule.everyMs % DAY_MS === 0) {
    yield* localTimesAfter(compileEveryDays(rule, rule.everyMs / DAY_MS), after.getTime(), untilMs);
    return;
  }
  // Anchored at the epoch (as BullMQ's `every`), so every replica and every restart agree on the grid.
  for (let t = Math.floor(after.getTime() / rule.everyMs) * rule.everyMs + rule.everyMs; ; t += rule.everyMs) {
    yield { at: new Date(t), kind: 'regular' };
  }
}

/** The first `count` occurrences strictly after `after`. */
export function nextOccurrences(rule: OccurrenceRule, after: Date, count: number): Occurrence[] {
  const out: Occurrence[] = [];
  if (count <= 0) return out;
  for (const o of occurrencesAfter(rule, after)) {
    out.push(o);
    if (out.length >= count) break;
  }
  return out;
}

/** Occurrences in `(from, to]`, ascending, at most `limit` (then `truncated` is set). */
export function occurrencesBetween(
  rule: OccurrenceRule,
  from: Date,
  to: Date,
  limit = Number.POSITIVE_INFINITY,
): { occurrences: Occurrence[]; truncated: boolean } {
  const occurrences: Occurrence[] = [];
  for (const o of occurrencesAfter(rule, from, to)) {
    if (o.at.getTime() > to.getTime()) return { occurrences, truncated: false };
    if (occurrences.length >= limit) return { occurrences, truncated: true };
    occurrences.push(o);
  }
  return { occurrences, truncated: false };
}

/** The last `count` occurrences strictly before `before`, ascending (fewer if the pattern has none that far back). */
export function previousOccurrences(rule: OccurrenceRule, before: Date, count: number): Occurrence[] {
  if (count <= 0) return [];
  const end = before.getTime() - 1;
  // Widen the look-back until it holds `count` occurrences; 40 years covers every satisfiable pattern
  // (Feb 29 on a Monday recurs within 28 years).
  for (let windowMs = 2 * DAY_MS; ; windowMs *= 4) {
    const found = occurrencesBetween(rule, new Date(end - windowMs), new Date(end)).occurrences;
    if (found.length >= count || windowMs > 40 * 366 * DAY_MS) return found.slice(-count);
  }
}

/** What a pattern says whatever its zone: parsed once per pattern. */
interface ParsedPattern {
  /** Seconds into the local day, ascending. */
  times: number[];
  everyHour: boolean;
  matchesDay: DayMatcher;
  /** Day of month, month and day of week are all `*`: every day matches (most patterns). */
  everyDay: boolean;
}

/**
 * Parsed patterns and compiled rules, shared by every schedule with the same pattern (and zone and DST
 * policy): a million runtime schedules use few distinct ones. Bounded: the oldest entry goes when full.
 */
const parsed = boundedCache<ParsedPattern>(1000);
const compiled = boundedCache<LocalTimes>(1000);

function compileCron(rule: Extract<OccurrenceRule, { kind: 'cron' }>): LocalTimes {
  return compiled(`${rule.pattern}\u0000${rule.tz}\u0000${rule.dst.gap}\u0000${rule.dst.fold}`, () => {
    const p = parsed(rule.pattern, () => parsePattern(rule.pattern));
    return { zone: IANAZone.create(rule.tz), dst: rule.dst, times: p.times, everyHour: p.everyHour, days: (from) => matchingDays(p, from) };
  });
}

function parsePattern(pattern: string): ParsedPattern {
  let fields: CronFieldCollection;
  try {
    fields = CronExpressionParser.parse(pattern, { tz: 'UTC', strict: false }).fields;
  } catch (err) {
    throw new JobDefinitionError('(schedule)', `cron pattern ${JSON.stringify(pattern)}: ${(err as Error).message}`);
  }
  const times: number[] = [];
  for (const h of fields.hour.values) {
    for (const m of fields.minute.values) for (const s of fields.second.values) times.push(h * 3600 + m * 60 + s);
  }
  times.sort((a, b) => a - b);
  return {
    times,
    everyHour: fields.hour.values.length === 24,
    matchesDay: dayMatcher(fields),
    everyDay: fields.dayOfMonth.isWildcard && fields.month.isWildcard && fields.dayOfWeek.isWildcard,
  };
}

/** Calendar days matching the day-of-month, month and day-of-week fields (cron-days.ts). */
function* matchingDays(c: ParsedPattern, fromUtcMidnight: number): Generator<LocalDay> {
  if (c.matchesDay.never) return; // e.g. April and June 31st: the schedule never fires
  for (let day = fromUtcMidnight / DAY_MS; ; day++) if (c.everyDay || c.matchesDay(day)) yield dayOf(day * DAY_MS);
}

function dayOf(utcMidnight: number): LocalDay {
  const d = new Date(utcMidnight);
  return { y: d.getUTCFullYear(), m: d.getUTCMonth() + 1, d: d.getUTCDate() };
}

const everyDays = boundedCache<LocalTimes>(1000);

/**
 * An `every` of whole days: local midnight of every `days`-th local date, counted from 1970-01-01 (so every
 * replica and restart agree), with the schedule's DST policy as for the pattern `0 0 * * *`.
 */
function compileEveryDays(rule: Extract<OccurrenceRule, { kind: 'every' }>, days: number): LocalTimes {
  const dst = { ...DEFAULT_DST, ...rule.dst };
  return everyDays(`${days}\u0000${rule.tz}\u0000${dst.gap}\u0000${dst.fold}`, () => ({
    zone: IANAZone.create(rule.tz),
    dst,
    times: [0],
    everyHour: false,
    *days(fromUtcMidnight: number) {
      const from = fromUtcMidnight / DAY_MS;
      for (let n = from + ((((days - from) % days) + days) % days); ; n += days) yield dayOf(n * DAY_MS);
    },
  }));
}
