import { CronExpression, CronExpressionParser, CronFieldCollection } from 'cron-parser';
import { DateTime, IANAZone } from 'luxon';
import type { DstPolicy, ScheduleSpec } from '@tickwork/core';
import { JobDefinitionError } from '@tickwork/core';
import { boundedCache } from '@tickwork/core';
import { DEFAULT_DST } from '@tickwork/core';
import { everyMs } from '@tickwork/core';

/**
 * The one place tickwork decides when a schedule fires. Pure (no Redis, no clock): the scheduler, the
 * catch-up planner, the preview and the tests all call it, so they can never disagree.
 *
 * cron-parser only parses the pattern and picks the matching calendar days (evaluated in UTC, where days
 * have no DST); turning a local wall time into instants is done here with luxon's zone offsets, so the
 * gap/fold policy is ours and per schedule.
 */
export type OccurrenceRule =
  | { kind: 'cron'; pattern: string; tz: string; dst: DstPolicy }
  | { kind: 'every'; everyMs: number; tz: string };

/**
 * - `regular`: the wall time exists once.
 * - `gap-shifted`: the wall time fell in a spring-forward gap and was moved forward by the gap's size.
 * - `fold-first` / `fold-second`: the wall time exists twice (fall back); which pass this is.
 */
export type OccurrenceKind = 'regular' | 'gap-shifted' | 'fold-first' | 'fold-second';

export interface Occurrence {
  /** The nominal fire instant. */
  at: Date;
  kind: OccurrenceKind;
}

const DAY_MS = 86_400_000;

export function ruleOf(jobName: string, spec: ScheduleSpec): OccurrenceRule {
  if (spec.pattern !== undefined) return { kind: 'cron', pattern: spec.pattern, tz: spec.tz, dst: { ...DEFAULT_DST, ...spec.dst } };
  return { kind: 'every', everyMs: everyMs(jobName, spec), tz: spec.tz };
}

/** Occurrences strictly after `after`, ascending, lazily (a schedule has no last occurrence). */
export function* occurrencesAfter(rule: OccurrenceRule, after: Date): Generator<Occurrence> {
  if (rule.kind === 'every') {
    // Anchored at the epoch (as BullMQ's `every`), so every replica and every restart agree on the grid.
    for (let t = Math.floor(after.getTime() / rule.everyMs) * rule.everyMs + rule.everyMs; ; t += rule.everyMs) {
      yield { at: new Date(t), kind: 'regular' };
    }
  }
  yield* cronAfter(compileCron(rule), after.getTime());
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
  for (const o of occurrencesAfter(rule, from)) {
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

interface CompiledCron {
  zone: IANAZone;
  dst: DstPolicy;
  /** Seconds into the local day at which the pattern fires, ascending. */
  times: number[];
  /** Every hour of the day matches: DST policy does not apply, the schedule keeps real-time spacing. */
  everyHour: boolean;
  fields: CronFieldCollection;
  /** The day fields alone (time fields fixed at midnight), built once: matching days come from them. */
  dayFields: CronFieldCollection;
  /** Day of month, month and day of week are all `*`: every day matches (most patterns), no cron-parser walk. */
  everyDay: boolean;
}

/**
 * Compiled patterns, shared by every schedule with the same pattern, zone and DST policy (a million
 * runtime schedules use few distinct ones). Bounded: the oldest entry goes when it is full.
 */
const compiled = boundedCache<CompiledCron>(1000);

function compileCron(rule: Extract<OccurrenceRule, { kind: 'cron' }>): CompiledCron {
  return compiled(`${rule.pattern}\u0000${rule.tz}\u0000${rule.dst.gap}\u0000${rule.dst.fold}`, () => compileCronUncached(rule));
}

function compileCronUncached(rule: Extract<OccurrenceRule, { kind: 'cron' }>): CompiledCron {
  let fields: CronFieldCollection;
  try {
    fields = CronExpressionParser.parse(rule.pattern, { tz: 'UTC', strict: false }).fields;
  } catch (err) {
    throw new JobDefinitionError('(schedule)', `cron pattern ${JSON.stringify(rule.pattern)}: ${(err as Error).message}`);
  }
  const times: number[] = [];
  for (const h of fields.hour.values) {
    for (const m of fields.minute.values) for (const s of fields.second.values) times.push(h * 3600 + m * 60 + s);
  }
  times.sort((a, b) => a - b);
  const dayFields = CronFieldCollection.from(fields, { second: [0], minute: [0], hour: [0] });
  const everyDay = fields.dayOfMonth.isWildcard && fields.month.isWildcard && fields.dayOfWeek.isWildcard;
  return { zone: IANAZone.create(rule.tz), dst: rule.dst, times, everyHour: fields.hour.values.length === 24, fields, dayFields, everyDay };
}

/**
 * Walks matching local days forward. A day's occurrences are all at or after that day's first instant, so
 * once the next matching day is known, everything pending before its start is final and can be emitted in
 * order (a gap-shifted time can land after the next day has started, hence the buffer).
 */
function* cronAfter(c: CompiledCron, afterMs: number): Generator<Occurrence> {
  // Start two UTC days back: at or before the local day before `afterMs` in any zone (offsets are within
  // +-14 h), without asking the zone (slow); earlier times are dropped by `lastEmitted`.
  const start = new Date(afterMs - 2 * DAY_MS);
  const days = matchingDays(c, Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate()));
  let pending: Occurrence[] = [];
  let lastEmitted = afterMs;
  for (const day of days) {
    const offset = regularDayOffset(c, day);
    const dayStart =
      offset !== null ? Date.UTC(day.y, day.m - 1, day.d) - offset * 60_000 : DateTime.fromObject({ year: day.y, month: day.m, day: day.d }, { zone: c.zone }).toMillis();
    const ready = pending.filter((o) => o.at.getTime() < dayStart);
    pending = pending.filter((o) => o.at.getTime() >= dayStart);
    for (const o of ready) {
      if (o.at.getTime() > lastEmitted) {
        lastEmitted = o.at.getTime();
        yield o;
      }
    }
    if (offset !== null && pending.length === 0) {
      // A day without an offset change: its times are final and ascending, so they are yielded lazily from
      // the first one after what was emitted (a per-second pattern has 86,400 a day; a tick needs a few).
      const base = Date.UTC(day.y, day.m - 1, day.d) - offset * 60_000;
      for (let i = firstTimeAfter(c.times, (lastEmitted - base) / 1000); i < c.times.length; i++) {
        const at = base + (c.times[i] as number) * 1000;
        lastEmitted = at;
        yield { at: new Date(at), kind: 'regular' };
      }
      continue;
    }
    pending.push(...dayOccurrences(c, day));
    pending.sort((a, b) => a.at.getTime() - b.at.getTime());
  }
  for (const o of pending) if (o.at.getTime() > lastEmitted) yield o;
}

interface LocalDay {
  y: number;
  m: number;
  d: number;
}

/** Calendar days matching the day-of-month, month and day-of-week fields, from cron-parser itself (L, W, # included). */
function* matchingDays(c: CompiledCron, fromUtcMidnight: number): Generator<LocalDay> {
  if (c.everyDay) {
    for (let t = fromUtcMidnight; ; t += DAY_MS) {
      const d = new Date(t);
      yield { y: d.getUTCFullYear(), m: d.getUTCMonth() + 1, d: d.getUTCDate() };
    }
  }
  const expr = CronExpression.fieldsToExpression(c.dayFields, { tz: 'UTC', currentDate: new Date(fromUtcMidnight - 1) });
  for (;;) {
    let next: Date;
    try {
      next = expr.next().toDate();
    } catch {
      return; // no further matching day (cron-parser's loop limit): the schedule is exhausted
    }
    yield { y: next.getUTCFullYear(), m: next.getUTCMonth() + 1, d: next.getUTCDate() };
  }
}

/** Per zone and day: its offset when regular (null: it changes). Zone offsets come from Intl and are slow. */
const dayOffsets = boundedCache<number | null>(10_000);

/** The day's UTC offset (minutes) when it does not change around that day, else null. */
function regularDayOffset(c: CompiledCron, day: LocalDay): number | null {
  return dayOffsets(`${c.zone.name}\u0000${day.y}-${day.m}-${day.d}`, () => {
    const wallMidnight = Date.UTC(day.y, day.m - 1, day.d);
    const before = c.zone.offset(wallMidnight - DAY_MS);
    return before === c.zone.offset(wallMidnight + 2 * DAY_MS) && c.zone.offset(wallMidnight + DAY_MS / 2) === before ? before : null;
  });
}

/** Index of the first of the ascending `times` (seconds into the day) strictly after `sec`. */
function firstTimeAfter(times: readonly number[], sec: number): number {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((times[mid] as number) <= sec) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function dayOccurrences(c: CompiledCron, day: LocalDay): Occurrence[] {
  const wallMidnight = Date.UTC(day.y, day.m - 1, day.d);
  // Offsets (minutes east of UTC) around the day. Real zones change offset at most once a day.
  const before = c.zone.offset(wallMidnight - DAY_MS);
  const after = c.zone.offset(wallMidnight + 2 * DAY_MS);
  const out: Occurrence[] = [];
  if (before === after && c.zone.offset(wallMidnight + DAY_MS / 2) === before) {
    for (const sec of c.times) out.push({ at: new Date(wallMidnight + sec * 1000 - before * 60_000), kind: 'regular' });
    return out;
  }
  for (const sec of c.times) {
    const wall = wallMidnight + sec * 1000;
    const valid = [...new Set([before, after])]
      .map((offset) => wall - offset * 60_000)
      .filter((t) => c.zone.offset(t) * 60_000 === wall - t)
      .sort((a, b) => a - b);
    const add = (t: number, kind: OccurrenceKind) => out.push({ at: new Date(t), kind });
    const [first, second] = valid;
    if (first === undefined) {
      // Spring forward: this wall time does not exist. Read with the offset before the jump, it names the
      // instant one gap-length later (02:30 -> 03:30 in New York, 02:15 -> 02:45 on Lord Howe).
      if (!c.everyHour && c.dst.gap === 'shift') add(wall - before * 60_000, 'gap-shifted');
    } else if (second === undefined) {
      add(first, 'regular');
    } else {
      add(first, 'fold-first');
      if (c.everyHour || c.dst.fold === 'twice') add(second, 'fold-second');
    }
  }
  // A shifted time can coincide with a real one (02:30 shifted onto a real 03:30): keep one, prefer the real.
  out.sort((a, b) => a.at.getTime() - b.at.getTime() || Number(a.kind === 'gap-shifted') - Number(b.kind === 'gap-shifted'));
  return out.filter((o, i) => i === 0 || out[i - 1]?.at.getTime() !== o.at.getTime());
}
