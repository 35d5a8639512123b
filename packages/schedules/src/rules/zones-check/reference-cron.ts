/**
 * The reference's own reading of a cron pattern (no cron-parser): 5 fields, or 6 with seconds first;
 * `*`, numbers, names (JAN, SUN), ranges, steps, lists, and `L` in the day of month. Day of month and day of
 * week both restricted match either one (as cron and cron-parser do). Enough for the patterns the zone
 * check uses, and it throws on anything else rather than guess.
 */

export interface ReferenceCron {
  /** Seconds into the local day, ascending. */
  times: number[];
  /** All 24 hours match: the DST policy does not apply. */
  everyHour: boolean;
  months: Set<number>;
  daysOfMonth: Set<number>;
  lastDayOfMonth: boolean;
  daysOfWeek: Set<number>;
  domRestricted: boolean;
  dowRestricted: boolean;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

function value(text: string, names: readonly string[], base: number): number {
  const named = names.indexOf(text.toUpperCase());
  if (named >= 0) return named + base;
  if (!/^\d+$/.test(text)) throw new Error(`reference cron: cannot read ${JSON.stringify(text)}`);
  return Number(text);
}

function field(text: string, min: number, max: number, names: readonly string[] = [], base = min): Set<number> {
  const out = new Set<number>();
  for (const part of text.split(',')) {
    const [range = '', stepText] = part.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new Error(`reference cron: bad step in ${JSON.stringify(part)}`);
    let lo: number;
    let hi: number;
    if (range === '*') [lo, hi] = [min, max];
    else if (range.includes('-')) {
      const [a = '', b = ''] = range.split('-');
      [lo, hi] = [value(a, names, base), value(b, names, base)];
    } else {
      lo = value(range, names, base);
      hi = stepText === undefined ? lo : max;
    }
    if (lo < min || hi > max || lo > hi) throw new Error(`reference cron: ${JSON.stringify(part)} is out of ${min}-${max}`);
    for (let v = lo; v <= hi; v += step) out.add(v);
  }
  return out;
}

export function parseReferenceCron(pattern: string): ReferenceCron {
  const parts = pattern.trim().split(/\s+/);
  if (parts.length === 5) parts.unshift('0');
  if (parts.length !== 6) throw new Error(`reference cron: ${JSON.stringify(pattern)} has ${parts.length} fields`);
  const [sec = '', min = '', hour = '', dom = '', month = '', dow = ''] = parts;
  const seconds = field(sec, 0, 59);
  const minutes = field(min, 0, 59);
  const hours = field(hour, 0, 23);
  const times: number[] = [];
  for (const h of hours) for (const m of minutes) for (const s of seconds) times.push(h * 3600 + m * 60 + s);
  times.sort((a, b) => a - b);
  const lastDayOfMonth = dom === 'L';
  const daysOfWeek = field(dow, 0, 7, DAYS, 0);
  if (daysOfWeek.delete(7)) daysOfWeek.add(0); // 7 is Sunday too
  return {
    times,
    everyHour: hours.size === 24,
    months: field(month, 1, 12, MONTHS, 1),
    daysOfMonth: lastDayOfMonth ? new Set() : field(dom, 1, 31),
    lastDayOfMonth,
    daysOfWeek,
    domRestricted: dom !== '*',
    dowRestricted: dow !== '*',
  };
}

/** Does the local date (days since 1970-01-01) match the pattern's day fields? */
export function matchesDate(c: ReferenceCron, day: number): boolean {
  const date = new Date(day * 86_400_000);
  if (!c.months.has(date.getUTCMonth() + 1)) return false;
  const lastOfMonth = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 0)).getUTCDate();
  const domMatch = c.lastDayOfMonth ? date.getUTCDate() === lastOfMonth : c.daysOfMonth.has(date.getUTCDate());
  const dowMatch = c.daysOfWeek.has(date.getUTCDay());
  if (c.domRestricted && c.dowRestricted) return domMatch || dowMatch;
  return domMatch && dowMatch;
}
