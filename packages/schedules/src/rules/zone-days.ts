import type { IANAZone } from 'luxon';

/**
 * How the wall-clock times of one local date map to instants in a zone, from luxon's offsets. Nearly every
 * day has one offset; a day near a change gets the changes themselves, so each wall time of it resolves by
 * arithmetic (a per-second pattern has 86,400 a day) instead of asking the zone again.
 */

export const DAY_MS = 86_400_000;

/** A change of UTC offset at instant `at`: `before` up to it, `after` from it (ms east of UTC). */
export interface Transition {
  at: number;
  before: number;
  after: number;
}

export type DayShape =
  | { kind: 'regular'; offset: number }
  /** `first` holds before the first transition; each transition's `after` holds until the next one. */
  | { kind: 'changing'; first: number; transitions: Transition[] };

/** Transitions are searched this finely (real zones change at most once in 4 days: bench:zones checks every one). */
const PROBE_MS = 6 * 3_600_000;

/**
 * Per zone (luxon keeps one IANAZone per name) and local date: zone offsets come from Intl and are slow.
 * Bounded per zone: the oldest date goes when it is full.
 */
const shapes = new WeakMap<IANAZone, Map<number, DayShape>>();
const SHAPES_PER_ZONE = 10_000;

/** The shape of the local date whose midnight, read as UTC, is `wallMidnight`. */
export function dayShape(zone: IANAZone, wallMidnight: number): DayShape {
  let dates = shapes.get(zone);
  if (!dates) shapes.set(zone, (dates = new Map()));
  let shape = dates.get(wallMidnight);
  if (!shape) {
    shape = shapeUncached(zone, wallMidnight);
    if (dates.size >= SHAPES_PER_ZONE) dates.delete(dates.keys().next().value as number);
    dates.set(wallMidnight, shape);
  }
  return shape;
}

function shapeUncached(zone: IANAZone, wallMidnight: number): DayShape {
  const offset = (t: number) => zone.offset(t) * 60_000;
  // The date's instants lie within [midnight - 14 h, midnight + 36 h] (offsets are -12..+14 h; a 23-hour
  // fold, Kwajalein 1969, stretches a date to 47 h); one offset at both ends and midway means none changed.
  const from = wallMidnight - DAY_MS;
  const to = wallMidnight + 2 * DAY_MS;
  const first = offset(from);
  if (offset(to) === first && offset(wallMidnight + DAY_MS / 2) === first) return { kind: 'regular', offset: first };
  const transitions: Transition[] = [];
  let before = first;
  for (let probe = from + PROBE_MS; probe <= to; probe += PROBE_MS) {
    const now = offset(probe);
    if (now === before) continue;
    // Bisect to the second: offsets change on whole seconds (Monrovia's -0:44:30 included).
    let lo = probe - PROBE_MS;
    let hi = probe;
    while (hi - lo > 1000) {
      const mid = Math.floor((lo + hi) / 2000) * 1000;
      if (offset(mid) === before) lo = mid;
      else hi = mid;
    }
    transitions.push({ at: hi, before, after: now });
    before = now;
  }
  return { kind: 'changing', first, transitions };
}

/** The offset in force at instant `t` (within the shape's reach). */
export function offsetAt(shape: DayShape, t: number): number {
  if (shape.kind === 'regular') return shape.offset;
  let offset = shape.first;
  for (const tr of shape.transitions) {
    if (t < tr.at) break;
    offset = tr.after;
  }
  return offset;
}

/** The least and greatest offset in the shape: a wall time's instants lie within `wall - max .. wall - min`. */
export function offsetRange(shape: DayShape): [number, number] {
  if (shape.kind === 'regular') return [shape.offset, shape.offset];
  const offsets = [shape.first, ...shape.transitions.map((tr) => tr.after)];
  return [Math.min(...offsets), Math.max(...offsets)];
}

/** The instants whose wall time is `wall` (ms, read as UTC), ascending: none in a gap, two in a fold. */
export function instantsOf(shape: DayShape, wall: number): number[] {
  if (shape.kind === 'regular') return [wall - shape.offset];
  const out: number[] = [];
  let start = Number.NEGATIVE_INFINITY;
  let offset = shape.first;
  // Each stretch between transitions has one offset; the wall time names an instant of it at most once.
  for (let i = 0; i <= shape.transitions.length; i++) {
    const next = shape.transitions[i];
    const end = next ? next.at : Number.POSITIVE_INFINITY;
    const t = wall - offset;
    if (t >= start && t < end) out.push(t);
    if (!next) break;
    start = next.at;
    offset = next.after;
  }
  return out;
}

/** The spring-forward transition whose skipped wall times include `wall`, if any. */
export function gapOf(shape: DayShape, wall: number): Transition | undefined {
  if (shape.kind === 'regular') return undefined;
  return shape.transitions.find((tr) => tr.after > tr.before && wall >= tr.at + tr.before && wall < tr.at + tr.after);
}

/** The local date (days since 1970-01-01) of instant `t`. */
export function localDayOf(shape: DayShape, t: number): number {
  return Math.floor((t + offsetAt(shape, t)) / DAY_MS);
}

/**
 * The first instant of the date: its first midnight when midnight happens twice (a fold across midnight,
 * St. John's 1987-2010), the end of the gap when midnight is skipped. No occurrence of this date or a later
 * one comes before it, which is what lets the day walk emit earlier ones.
 */
export function dateStart(shape: DayShape, wallMidnight: number): number {
  const first = instantsOf(shape, wallMidnight)[0];
  if (first !== undefined) return first;
  return gapOf(shape, wallMidnight)?.at ?? wallMidnight - offsetAt(shape, wallMidnight);
}
