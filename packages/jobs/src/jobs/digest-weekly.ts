/**
 * digest.weekly: Monday 10:00 UTC, fans out one email.send per subscriber.
 *
 * Idempotent because: each email's job id is `digest.weekly:<week>:<subscriber>`; BullMQ ignores an add
 * whose id exists, so a rerun of the fan-out enqueues nothing new.
 */
import { defineJob } from 'tickwork';
import { DateTime } from 'luxon';
import { z } from 'zod';
import { DEMO_SUBSCRIBERS } from '../demo-data.js';
import { emailSend } from './email-send.js';

export const digestWeekly = defineJob({
  name: 'digest.weekly',
  queue: 'email',
  description: 'Weekly digest to every subscriber.',
  schema: z.object({}),
  schedule: { pattern: '0 10 * * 1', tz: 'UTC' },
  async handler(ctx) {
    const week = DateTime.fromJSDate(ctx.nominalTime ?? new Date(), { zone: 'UTC' }).toFormat("kkkk-'W'WW");
    for (const to of DEMO_SUBSCRIBERS) {
      await ctx.enqueue(
        emailSend,
        { to, subject: `Your weekly digest (${week})`, body: `Here is what happened in ${week}.` },
        { jobId: `digest.weekly-${week}-${to}` },
      );
    }
    ctx.log.info({ week, emails: DEMO_SUBSCRIBERS.length }, 'weekly digest fanned out');
    return { week, emails: DEMO_SUBSCRIBERS.length };
  },
});
