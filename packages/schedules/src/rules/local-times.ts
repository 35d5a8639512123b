import type { IANAZone } from 'luxon';
import type { DstPolicy } from '@tickwork/core';
import { DAY_MS, dateStart, dayShape, gapOf, instantsOf, localDayOf, offsetRange, type DayShape } from './zone-days.js';

/**
 * Local wall times on matching local dates, turned into instants with a schedule's DST policy: the walk
 * both cron patterns and day-long `every` intervals fire on.
 */

/**
 * - `regular`: the wall time exists once.
 * - `gap-shifted`: the wall time fell in a spring-forward gap and runs later by the gap's size.
 * - `gap-shifted-back`: it fell in a gap that runs into the next date (America/Nuuk springs forward at
 *   23:00), so running later would move it onto the next date; it runs earlier by the gap's size instead.
 * - `fold-first` / `fold-second`: the wall time exists twice (fall back); which pass this is.
 */
export type OccurrenceKind = 'regular' | 'gap-shifted' | 'gap-shifted-back' | 'fold-first' | 'fold-second';

export interface Occurrence {
  /** The nominal fire instant. */
  at: Date;
  kind: OccurrenceKind;
}

/** A local date, 1-based month. */
export interface LocalDay {
  y: number;
  m: number;
  d: number;
}

export interface LocalTimes {
  zone: IANAZone;
  dst: DstPolicy;
  /** Seconds into the local day at which it fires, ascending. */
  times: number[];
  /** Every hour of the day matches: DST policy does not apply, the schedule keeps real-time spacing. */
  everyHour: boolean;
  /** The matching local dates from `fromUtcMidnight` (a date read as UTC) on, ascending. */
  days: (fromUtcMidnight: number) => Iterable<LocalDay>;
}

/** When two runs of one date fall on one instant (02:30 shifted onto a real 03:30), the first kind here stays. */
const RANK: Record<OccurrenceKind, number> = { regular: 0, 'fold-first': 1, 'fold-second': 2, 'gap-shifted': 3, 'gap-shifted-back': 4 };

const byTime = (a: Occurrence, b: Occurrence) => a.at.getTime() - b.at.getTime() || RANK[a.kind] - RANK[b.kind];

/**
 * Walks matching local dates forward, yielding every occurrence in (afterMs, untilMs] (and, lazily, more
 * after it: `untilMs` only spares a date near an offset change the times no caller wants). Every occurrence of a date lies on that date and so at or after its
 * first instant (`dateStart`); once the next matching date's start is known, everything pending before it
 * is final and can be emitted in order. A date's runs can come after the next date's first ones (the
 * second pass of a fold across midnight), hence the buffer.
 */
export function* localTimesAfter(c: LocalTimes, afterMs: number, untilMs = Number.POSITIVE_INFINITY): Generator<Occurrence> {
  // Start two UTC days back: at or before the local date before `afterMs` in any zone (a date's instants end
  // at most 36 h after its midnight read as UTC), without asking the zone; earlier times are dropped below.
  const start = new Date(afterMs - 2 * DAY_MS);
  let pending: Occurrence[] = [];
  let lastEmitted = afterMs;
  for (const day of c.days(Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate()))) {
    const wallMidnight = Date.UTC(day.y, day.m - 1, day.d);
    const shape = dayShape(c.zone, wallMidnight);
    const first = shape.kind === 'regular' ? wallMidnight - shape.offset : dateStart(shape, wallMidnight);
    let ready = 0;
    while (ready < pending.length && (pending[ready] as Occurrence).at.getTime() < first) ready++;
    for (const o of pending.slice(0, ready)) {
      if (o.at.getTime() > lastEmitted) {
        lastEmitted = o.at.getTime();
        yield o;
      }
    }
    pending = pending.slice(ready);
    if (shape.kind === 'regular' && pending.length === 0) {
      // A date without an offset change: its times are final and ascending, so they are yielded lazily from
      // the first one after what was emitted (a per-second pattern has 86,400 a day; a tick needs a few).
      for (let i = firstTimeAfter(c.times, (lastEmitted - first) / 1000); i < c.times.length; i++) {
        const at = first + (c.times[i] as number) * 1000;
        lastEmitted = at;
        yield { at: new Date(at), kind: 'regular' };
      }
      continue;
    }
    pending.push(...dateOccurrences(c, shape, wallMidnight, lastEmitted, untilMs));
    pending.sort(byTime);
  }
  for (const o of pending) if (o.at.getTime() > lastEmitted) yield o;
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

/**
 * The runs of a date near an offset change with instants in (afterMs, untilMs], ascending, each on that
 * date (a skipped date has none). Only the times that can land there are resolved: a restart mid-date, or
 * a short window of a per-second pattern, does not pay for the whole date.
 */
function dateOccurrences(c: LocalTimes, shape: DayShape, wallMidnight: number, afterMs: number, untilMs: number): Occurrence[] {
  const date = wallMidnight / DAY_MS;
  const out: Occurrence[] = [];
  const add = (t: number, kind: OccurrenceKind) => out.push({ at: new Date(t), kind });
  const [minOffset, maxOffset] = offsetRange(shape);
  // A wall time's runs (shifted ones included) lie within [wall - maxOffset, wall - minOffset].
  for (let i = firstTimeAfter(c.times, (afterMs + minOffset - wallMidnight) / 1000); i < c.times.length; i++) {
    const wall = wallMidnight + (c.times[i] as number) * 1000;
    if (wall - maxOffset > untilMs) break;
    const [first, ...later] = instantsOf(shape, wall);
    if (first === undefined) {
      // Spring forward: this wall time does not exist. Read with the offset before the jump, it names the
      // instant one gap-length later (02:30 -> 03:30 in New York, 02:15 -> 02:45 on Lord Howe). Where that
      // is on the next date (Nuuk's gap runs from 23:00 to midnight), read with the offset after the jump
      // instead: one gap-length earlier, so a daily job still runs once on every date. A date the zone skips
      // whole (Apia 2011-12-30) has neither, and no run.
      const gap = gapOf(shape, wall);
      if (c.everyHour || c.dst.gap !== 'shift' || !gap) continue;
      const forward = wall - gap.before;
      const backward = wall - gap.after;
      if (localDayOf(shape, forward) === date) add(forward, 'gap-shifted');
      else if (localDayOf(shape, backward) === date) add(backward, 'gap-shifted-back');
    } else if (later.length === 0) {
      add(first, 'regular');
    } else {
      add(first, 'fold-first');
      if (c.everyHour || c.dst.fold === 'twice') for (const t of later) add(t, 'fold-second');
    }
  }
  // A shifted time can coincide with a real one (02:30 shifted onto a real 03:30): keep one, prefer the real.
  out.sort(byTime);
  return out.filter((o, i) => i === 0 || out[i - 1]?.at.getTime() !== o.at.getTime());
}
