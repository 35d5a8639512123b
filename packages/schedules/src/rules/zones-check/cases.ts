/**
 * The schedules the zone check fires around every offset change. Each case looks `reachMs` either side of
 * the change (plus the change's size, up to `reachMs` more): sub-hourly patterns up to two hours, hourly ones eight, daily and
 * longer ones a day and a half, which holds the whole local dates on both sides (where a fold across
 * midnight or a gap at 23:00 moves runs between dates).
 */

export interface ZoneCase {
  /** A cron pattern, or an `every` interval in ms. */
  pattern?: string;
  everyMs?: number;
  reachMs: number;
  /** One time on every date: under the default policy each date gets exactly one run, on that date. */
  daily: boolean;
}

const HOUR = 3_600_000;
const MINUTE = 60_000;

const subHourly = (pattern: string, reachMs = 2 * HOUR): ZoneCase => ({ pattern, reachMs, daily: false });
const hourly = (pattern: string): ZoneCase => ({ pattern, reachMs: 8 * HOUR, daily: false });
const day = (pattern: string, daily = false): ZoneCase => ({ pattern, reachMs: 36 * HOUR, daily });
const every = (everyMs: number): ZoneCase => ({ everyMs, reachMs: everyMs >= 86_400_000 ? 60 * HOUR : 8 * HOUR, daily: everyMs === 86_400_000 });

/** Daily single times, chosen to land in gaps and folds at midnight, 01:00-03:00 and 23:00 somewhere. */
const DAILY_TIMES = [
  '0 0', '1 0', '15 0', '30 0', '45 0', '59 0', '0 1', '15 1', '30 1', '45 1', '59 1', '0 2', '15 2', '30 2', '45 2',
  '0 3', '30 3', '0 4', '0 5', '0 6', '0 9', '0 12', '0 18', '0 21', '0 22', '30 22', '0 23', '15 23', '30 23', '45 23', '59 23',
];

export const ZONE_CASES: readonly ZoneCase[] = [
  // Minute steps: both passes of a fold and real-time spacing through every change.
  subHourly('* * * * *', 40 * MINUTE),
  subHourly('*/5 * * * *'),
  subHourly('*/10 * * * *'),
  subHourly('*/15 * * * *'),
  subHourly('*/20 * * * *'),
  subHourly('*/30 * * * *'),
  subHourly('0,30 * * * *'),
  subHourly('15,45 * * * *'),
  subHourly('7,37 * * * *'),
  subHourly('*/7 * * * *'),
  subHourly('10-50/20 * * * *'),
  subHourly('*/45 * * * *'),
  subHourly('*/30 * * * * *', 10 * MINUTE),
  subHourly('0 */15 * * * *'),
  // Every hour, and hour lists (these take the DST policy).
  hourly('0 * * * *'),
  hourly('30 * * * *'),
  hourly('45 * * * *'),
  hourly('1 * * * *'),
  hourly('59 * * * *'),
  hourly('0 */2 * * *'),
  hourly('30 */2 * * *'),
  hourly('0 */3 * * *'),
  hourly('0 1-23/2 * * *'),
  hourly('15 */6 * * *'),
  hourly('0 0-5 * * *'),
  hourly('30 0-3 * * *'),
  hourly('0 20-23,0-3 * * *'),
  hourly('0 9-17 * * *'),
  hourly('0,30 22-23,0-2 * * *'),
  hourly('15 0,1,2,3 * * *'),
  hourly('45 23,0 * * *'),
  hourly('0 23,0,1 * * *'),
  // Once a day.
  ...DAILY_TIMES.map((t) => day(`${t} * * *`, true)),
  day('30 0 0 * * *', true),
  day('59 59 23 * * *', true),
  day('15 30 2 * * *', true),
  // Several times a day.
  day('0 0,12 * * *'),
  day('30 1,2,3 * * *'),
  day('0,30 0 * * *'),
  day('0,30 23 * * *'),
  day('30 0,23 * * *'),
  day('0 22,23 * * *'),
  day('0 0,1 * * *'),
  day('15,45 1,2 * * *'),
  day('0 2,3 * * *'),
  day('0 0,6,12,18 * * *'),
  day('0,20,40 2 * * *'),
  day('0 1,2 * * *'),
  day('45 0,1,2 * * *'),
  day('30 22,23 * * *'),
  // Weekly (most changes are on a Sunday or at the end of a Saturday), monthly, yearly.
  day('0 0 * * 0'),
  day('30 2 * * 0'),
  day('30 1 * * 0'),
  day('0 0 * * 6'),
  day('30 23 * * 6'),
  day('0 3 * * 0'),
  day('0 0 * * 5'),
  day('0 12 * * 1-5'),
  day('0 2 * * SUN'),
  day('30 0 * * 0,6'),
  day('0 0,2 * * 0'),
  day('0 0 1 * *'),
  day('30 2 1 * *'),
  day('0 0 L * *'),
  day('30 23 L * *'),
  day('0 1 1,15 * *'),
  day('0 0 31 12 *'),
  day('0 12 30 12 *'),
  day('0 0 1 1 *'),
  day('0 2 * 3 0'),
  day('0 0 1-7 * 0'),
  // `every`: whole days are local dates, anything else real time.
  every(86_400_000),
  every(2 * 86_400_000),
  every(7 * 86_400_000),
  every(HOUR),
  every(90 * MINUTE),
  every(45 * MINUTE),
  every(5 * HOUR),
];

export const DST_POLICIES = [
  { gap: 'shift', fold: 'once' },
  { gap: 'shift', fold: 'twice' },
  { gap: 'skip', fold: 'once' },
  { gap: 'skip', fold: 'twice' },
] as const;
