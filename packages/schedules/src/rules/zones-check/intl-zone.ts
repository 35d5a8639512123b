/**
 * A zone's wall clock from `Intl.DateTimeFormat` alone: the reference side of the zone check must not share
 * luxon (nor cron-parser) with the engine it judges, or a bug in either would agree with itself.
 */

export const DAY_MS = 86_400_000;

/** `en-US` with these options formats as `10/27/1991, 00:00:00`, which is cheaper to read than formatToParts. */
const FORMAT = /^(\d+)\/(\d+)\/(\d+), (\d+):(\d+):(\d+)$/;

export class IntlZone {
  readonly name: string;
  private readonly formatter: Intl.DateTimeFormat;

  constructor(name: string) {
    this.name = name;
    this.formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: name,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  }

  /** The wall clock at instant `t`, as the ms of the same fields read in UTC. */
  wallMs(t: number): number {
    const text = this.formatter.format(t);
    const m = FORMAT.exec(text);
    if (!m) throw new Error(`Intl formatted ${t} in ${this.name} as ${JSON.stringify(text)}`);
    // Intl drops the milliseconds (it floors to the second, before 1970 too); they carry over unchanged.
    return Date.UTC(Number(m[3]), Number(m[1]) - 1, Number(m[2]), Number(m[4]), Number(m[5]), Number(m[6])) + (((t % 1000) + 1000) % 1000);
  }

  /** The UTC offset at `t`, ms east of UTC. */
  offsetMs(t: number): number {
    return this.wallMs(t) - t;
  }
}

/** A change of UTC offset at instant `at`: `before` up to it, `after` from it (ms east of UTC). */
export interface ZoneTransition {
  at: number;
  before: number;
  after: number;
}

/** A zone's offsets over [from, to]: `initial` at `from`, then each change, ascending. */
export interface Timeline {
  zone: IntlZone;
  from: number;
  to: number;
  initial: number;
  transitions: ZoneTransition[];
}

/**
 * Every offset change in [from, to]: the offset is sampled every `stepMs` and each change bisected to the
 * second. Two changes within one step that cancel out would be missed; tzdata has none closer than days
 * (the bench reports the closest pair it found, so a finer step can be chosen if that ever changes).
 */
export function scanTimeline(zone: IntlZone, from: number, to: number, stepMs = DAY_MS): Timeline {
  const initial = zone.offsetMs(from);
  const transitions: ZoneTransition[] = [];
  let before = initial;
  for (let lo = from; lo < to; lo += stepMs) {
    const hi0 = Math.min(lo + stepMs, to);
    const now = zone.offsetMs(hi0);
    if (now === before) continue;
    let a = lo;
    let b = hi0;
    while (b - a > 1000) {
      const mid = Math.floor((a + b) / 2000) * 1000;
      if (zone.offsetMs(mid) === before) a = mid;
      else b = mid;
    }
    transitions.push({ at: b, before, after: now });
    before = now;
  }
  return { zone, from, to, initial, transitions };
}

/** Index of the first transition at or after `t`. */
function firstTransitionFrom(tl: Timeline, t: number): number {
  let lo = 0;
  let hi = tl.transitions.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((tl.transitions[mid] as ZoneTransition).at < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The offset in force at `t`. */
export function offsetIn(tl: Timeline, t: number): number {
  if (t < tl.from || t > tl.to) throw new Error(`${new Date(t).toISOString()} is outside the scanned span of ${tl.zone.name}`);
  const i = firstTransitionFrom(tl, t + 1); // a transition at exactly t is in force at t
  return i === 0 ? tl.initial : (tl.transitions[i - 1] as ZoneTransition).after;
}

/** The transitions with `at` in [from, to]. */
export function transitionsIn(tl: Timeline, from: number, to: number): ZoneTransition[] {
  const out: ZoneTransition[] = [];
  for (let i = firstTransitionFrom(tl, from); i < tl.transitions.length; i++) {
    const tr = tl.transitions[i] as ZoneTransition;
    if (tr.at > to) break;
    out.push(tr);
  }
  return out;
}
