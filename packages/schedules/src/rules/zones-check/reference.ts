import { DAY_MS, offsetIn, transitionsIn, type Timeline } from './intl-zone.js';
import { matchesDate, type ReferenceCron } from './reference-cron.js';

/**
 * The documented occurrence semantics (docs/schedules.md, "DST policy"), written as directly as possible
 * over an Intl-only timeline: for every matching local date and every time of the pattern, find every
 * instant whose wall clock reads that date and time, then apply the policy. Nothing here is shared with the
 * engine but the names of the labels and the policy object.
 */

export type ReferenceKind = 'regular' | 'gap-shifted' | 'gap-shifted-back' | 'fold-first' | 'fold-second';

export interface ReferenceOccurrence {
  at: number;
  kind: ReferenceKind;
  /** The local date it is a run of (days since 1970-01-01). */
  day: number;
}

export interface ReferencePolicy {
  gap: 'shift' | 'skip';
  fold: 'once' | 'twice';
}

export type ReferenceRule =
  | { kind: 'cron'; cron: ReferenceCron; dst: ReferencePolicy }
  /** Whole days: local midnight of every `days`-th date from 1970-01-01; other intervals: an epoch grid. */
  | { kind: 'every'; everyMs: number; dst: ReferencePolicy };

/** Offsets are within -12..+14 h, so the instants of a wall time are within this of it. */
const REACH_MS = 16 * 3_600_000;

const RANK: Record<ReferenceKind, number> = { regular: 0, 'fold-first': 1, 'fold-second': 2, 'gap-shifted': 3, 'gap-shifted-back': 4 };

/** The instants whose wall clock reads `wall` (ms read as UTC), ascending. */
export function instantsAt(tl: Timeline, wall: number): number[] {
  const out: number[] = [];
  const offsets = new Set([offsetIn(tl, wall - REACH_MS), ...transitionsIn(tl, wall - REACH_MS, wall + REACH_MS).map((tr) => tr.after)]);
  for (const offset of offsets) {
    const t = wall - offset;
    if (offsetIn(tl, t) === offset) out.push(t);
  }
  return out.sort((a, b) => a - b);
}

/** Local date (days since 1970-01-01) of an instant. */
export function localDay(tl: Timeline, t: number): number {
  return Math.floor((t + offsetIn(tl, t)) / DAY_MS);
}

/** No instant has this local date: a spring-forward skips all of it (Apia 2011-12-30). */
export function dateSkipped(tl: Timeline, day: number): boolean {
  const midnight = day * DAY_MS;
  return transitionsIn(tl, midnight - REACH_MS - DAY_MS, midnight + DAY_MS + REACH_MS).some(
    (tr) => tr.at + tr.before <= midnight && tr.at + tr.after >= midnight + DAY_MS,
  );
}

/** The runs one local date has for one wall time, by the documented policy. */
function runsOf(tl: Timeline, day: number, sec: number, everyHour: boolean, dst: ReferencePolicy): ReferenceOccurrence[] {
  const wall = day * DAY_MS + sec * 1000;
  const instants = instantsAt(tl, wall);
  const run = (at: number, kind: ReferenceKind): ReferenceOccurrence => ({ at, kind, day });
  if (instants.length === 1) return [run(instants[0] as number, 'regular')];
  if (instants.length > 1) {
    // Fall back: the first pass always; the later ones with fold 'twice', or for an every-hour pattern.
    const passes = everyHour || dst.fold === 'twice' ? instants : instants.slice(0, 1);
    return passes.map((at, i) => run(at, i === 0 ? 'fold-first' : 'fold-second'));
  }
  // Spring forward: the wall time does not exist. Every-hour patterns and gap 'skip' drop it; 'shift'
  // moves it later by the gap's size, or earlier by it where later would leave the date.
  if (everyHour || dst.gap === 'skip') return [];
  const gap = transitionsIn(tl, wall - REACH_MS, wall + REACH_MS).find((tr) => tr.after > tr.before && wall >= tr.at + tr.before && wall < tr.at + tr.after);
  if (!gap) throw new Error(`reference: ${new Date(wall).toISOString()} (wall) in ${tl.zone.name} has no instant and no gap`);
  const later = wall - gap.before;
  if (localDay(tl, later) === day) return [run(later, 'gap-shifted')];
  const earlier = wall - gap.after;
  if (localDay(tl, earlier) === day) return [run(earlier, 'gap-shifted-back')];
  return [];
}

/** The rule's runs with instants in (from, to], ascending, one per instant (a real time wins over a shifted one). */
export function referenceBetween(tl: Timeline, rule: ReferenceRule, from: number, to: number): ReferenceOccurrence[] {
  if (rule.kind === 'every' && rule.everyMs % DAY_MS !== 0) {
    const out: ReferenceOccurrence[] = [];
    for (let k = Math.floor(from / rule.everyMs) + 1; k * rule.everyMs <= to; k++) {
      out.push({ at: k * rule.everyMs, kind: 'regular', day: localDay(tl, k * rule.everyMs) });
    }
    return out;
  }
  const times = rule.kind === 'cron' ? rule.cron.times : [0];
  const everyHour = rule.kind === 'cron' && rule.cron.everyHour;
  const everyDays = rule.kind === 'every' ? rule.everyMs / DAY_MS : 0;
  const all: ReferenceOccurrence[] = [];
  // A run at instant t in (from, to] reads a wall time t + offset, with one of the offsets in force around.
  const around = [offsetIn(tl, from - 26 * 3_600_000), ...transitionsIn(tl, from - 26 * 3_600_000, to + 26 * 3_600_000).map((tr) => tr.after)];
  const wallFrom = from + Math.min(...around);
  const wallTo = to + Math.max(...around);
  // Every date whose instants can reach (from, to]: a date's instants lie within 14 h before its midnight
  // (read as UTC) and 36 h after it.
  for (let day = Math.floor((from - 2 * DAY_MS) / DAY_MS); day <= Math.floor((to + DAY_MS) / DAY_MS); day++) {
    if (rule.kind === 'cron' ? !matchesDate(rule.cron, day) : ((day % everyDays) + everyDays) % everyDays !== 0) continue;
    for (const sec of times) {
      const wall = day * DAY_MS + sec * 1000;
      if (wall > wallFrom && wall <= wallTo) all.push(...runsOf(tl, day, sec, everyHour, rule.dst));
    }
  }
  all.sort((a, b) => a.at - b.at || RANK[a.kind] - RANK[b.kind]);
  return all.filter((o, i) => o.at > from && o.at <= to && (i === 0 || all[i - 1]?.at !== o.at));
}

/**
 * Checks the reference's instants against Intl directly (not through the scanned timeline): a real run's
 * wall clock reads its date and time, a shifted one's its date. Every shifted run is read, and one other
 * run in `every` (1: all). Returns a description of the first misfit.
 */
export function verifyWithIntl(tl: Timeline, rule: ReferenceRule, runs: readonly ReferenceOccurrence[], every = 1): string | null {
  const times = rule.kind === 'cron' ? new Set(rule.cron.times) : rule.everyMs % DAY_MS === 0 ? new Set([0]) : null;
  for (const [i, o] of runs.entries()) {
    if (o.kind !== 'gap-shifted' && o.kind !== 'gap-shifted-back' && i % every !== 0) continue;
    const wall = tl.zone.wallMs(o.at);
    const day = Math.floor(wall / DAY_MS);
    const sec = Math.floor((wall - day * DAY_MS) / 1000);
    const shifted = o.kind === 'gap-shifted' || o.kind === 'gap-shifted-back';
    if (day !== o.day || (!shifted && times !== null && !times.has(sec))) {
      return `${tl.zone.name} ${new Date(o.at).toISOString()} ${o.kind}: Intl reads ${new Date(wall).toISOString().slice(0, 19)}, expected a run of day ${new Date(o.day * DAY_MS).toISOString().slice(0, 10)}`;
    }
  }
  return null;
}
