/**
 * reports.daily-revenue: at 08:00 New York time, totals the charges and stores the day's report.
 *
 * Idempotent because: the report is written with HSET under its date, so a rerun overwrites the same
 * report with the same numbers instead of adding a second one.
 */
import { defineJob } from 'tickwork';
import { DateTime } from 'luxon';
import { z } from 'zod';
import { DEMO_KEYS, type ChargeRecord } from '../demo-data.js';

export const reportsDailyRevenue = defineJob({
  name: 'reports.daily-revenue',
  queue: 'reports',
  description: 'Revenue report for the previous day, New York time.',
  schema: z.object({
    date: z.iso.date().optional(),
  }),
  schedule: { pattern: '0 8 * * *', tz: 'America/New_York' },
  async handler(ctx) {
    const date =
      ctx.data.date ??
      DateTime.fromJSDate(ctx.nominalTime ?? new Date(), { zone: 'America/New_York' }).minus({ days: 1 }).toISODate();
    const raw = await ctx.redis.lrange(DEMO_KEYS.charges, 0, -1);
    const charges = raw.map((r) => JSON.parse(r) as ChargeRecord);
    const report = {
      date,
      charges: charges.length,
      revenueCents: charges.reduce((sum, c) => sum + c.amountCents, 0),
      generatedAt: new Date().toISOString(),
    };
    await ctx.redis.hset(DEMO_KEYS.reports, String(date), JSON.stringify(report));
    ctx.log.info(report, 'daily revenue report stored');
    return report;
  },
});
