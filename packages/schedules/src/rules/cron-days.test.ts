import { describe, expect, it } from 'vitest';
import { CronExpression, CronExpressionParser, CronFieldCollection } from 'cron-parser';
import { dayMatcher } from './cron-days.js';

const DAY_MS = 86_400_000;
const fieldsOf = (pattern: string) => CronExpressionParser.parse(pattern, { tz: 'UTC', strict: false }).fields;

/** The dates in [from, to) cron-parser's own walk gives for the pattern's day fields, as days since 1970. */
function cronParserDays(pattern: string, from: number, to: number): number[] {
  const dayFields = CronFieldCollection.from(fieldsOf(pattern), { second: [0], minute: [0], hour: [0] });
  const expr = CronExpression.fieldsToExpression(dayFields, { tz: 'UTC', currentDate: new Date(from * DAY_MS - 1) });
  const out: number[] = [];
  for (let t = expr.next().getTime(); t < to * DAY_MS; t = expr.next().getTime()) out.push(t / DAY_MS);
  return out;
}

describe('dayMatcher: the dates of the day fields, by cron-parser’s rules', () => {
  // 2024 is a leap year; its months start on every weekday but one.
  const from = Date.UTC(2024, 0, 1) / DAY_MS;
  const to = Date.UTC(2025, 0, 1) / DAY_MS;

  it.each([
    '0 0 1 * *',
    '0 0 L * *',
    '0 0 1,L * *',
    '0 0 29 2 *',
    '0 0 31 * *',
    '0 0 * * 0',
    '0 0 * * 7',
    '0 0 * * 1-5',
    '0 0 * * 5L',
    '0 0 * * 1#2',
    '0 0 1-7 * 0',
    '0 0 */2 * 1',
    '0 0 ? * SUN',
    '0 0 * JAN-MAR,OCT *',
    '0 0 15 6 SAT',
    '0 0 L * 5L',
  ])('%s', (pattern) => {
    const matches = dayMatcher(fieldsOf(pattern));
    const ours: number[] = [];
    for (let day = from; day < to; day++) if (matches(day)) ours.push(day);
    expect(ours).toEqual(cronParserDays(pattern, from, to));
    expect(matches.never).toBe(false);
  });

  it('knows a pattern that never matches (cron-parser refuses `0 0 30 2 *`, not this)', () => {
    expect(dayMatcher(fieldsOf('0 0 31 4,6 *')).never).toBe(true);
    expect(dayMatcher(fieldsOf('0 0 29 2 1')).never).toBe(false); // Feb 29, or any Monday
  });
});
