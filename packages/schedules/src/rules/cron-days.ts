import type { CronFieldCollection } from 'cron-parser';
import { DAY_MS } from './zone-days.js';

/**
 * Which calendar dates a cron pattern's day fields (day of month, month, day of week) match, read from
 * cron-parser's parsed fields with cron-parser's own rules (CronExpression#matchDayOfMonth: `L`, `5L`,
 * `1#2`, and day of month OR day of week when both are restricted). Walking dates with cron-parser itself
 * cost a luxon date step per day (about 6 ms to find a monthly pattern's next date); this is a table
 * look-up per date. cron-days.test.ts holds it to cron-parser's walk.
 */

export interface DayMatcher {
  (day: number): boolean;
  /** No date of a 400-year cycle matches (`0 0 31 4,6 *`): the schedule never fires. */
  never: boolean;
}

/** The Gregorian calendar, weekdays included, repeats every 400 years. */
const CYCLE_DAYS = 146_097;

const lastDayOfMonth = (y: number, m: number) => new Date(Date.UTC(y, m, 0)).getUTCDate();

/** A matcher of dates given as days since 1970-01-01. */
export function dayMatcher(fields: CronFieldCollection): DayMatcher {
  const months = new Set(fields.month.values.map(Number));
  const dom = fields.dayOfMonth;
  const dow = fields.dayOfWeek;
  const daysOfMonth = new Set<number>(dom.values.filter((v) => typeof v === 'number'));
  // cron-parser lists 7 (Sunday) beside 0; getDay() never returns 7.
  const daysOfWeek = new Set<number>(dow.values.filter((v) => typeof v === 'number').map((v) => v % 7));
  // `5L` (last Friday): cron-parser reads the first character of every value of the field, `5L` or plain.
  const lastWeekdays = new Set(dow.values.map((v) => Number.parseInt(String(v).charAt(0), 10) % 7));
  const domRestricted = !dom.isWildcard;
  const dowRestricted = !dow.isWildcard;
  const nth = dow.nthDay;
  const matches = (day: number): boolean => {
    const date = new Date(day * DAY_MS);
    const y = date.getUTCFullYear();
    const m = date.getUTCMonth() + 1;
    const d = date.getUTCDate();
    if (!months.has(m)) return false;
    const last = lastDayOfMonth(y, m);
    const weekday = date.getUTCDay();
    const matchedDom = daysOfMonth.has(d) || (dom.hasLastChar && d === last);
    const matchedDow =
      (daysOfWeek.has(weekday) && (nth <= 0 || Math.ceil(d / 7) === nth)) || (dow.hasLastChar && d > last - 7 && lastWeekdays.has(weekday));
    if (domRestricted && dowRestricted) return matchedDom || matchedDow;
    if (!dowRestricted) return matchedDom;
    return matchedDow;
  };
  let never = true;
  for (let day = 0; day < CYCLE_DAYS && never; day++) if (matches(day)) never = false;
  return Object.assign(matches, { never });
}
