/**
 * digest.morning: at 09:00 in each user's own timezone, one email.send per user. The schedule runs every
 * 15 minutes in UTC; each run picks the timezones where it is 09:00-09:14 at its nominal time.
 *
 * Idempotent because: each email's job id is `digest.morning@<user>@<local date>`, so a retry, a catch-up
 * of the same slot or a second replica adds nothing new, and a user gets one digest per local day.
 */
import { defineJob, localFanOutKey, usersAtLocalTime } from 'tickwork';
import { z } from 'zod';
import { DEMO_DIGEST_USERS } from '../demo-data.js';
import { emailSend } from './email-send.js';

export const DIGEST_LOCAL_TIME = '09:00';

export const digestMorning = defineJob({
  name: 'digest.morning',
  queue: 'email',
  description: 'Morning digest at 09:00 in each user\'s timezone.',
  schema: z.object({}),
  // Catch-up matters: a skipped slot would skip a whole timezone's digest for the day.
  schedule: { pattern: '*/15 * * * *', tz: 'UTC', missed: 'all', catchUpWindow: { hours: 3 }, maxCatchUp: 12 },
  async handler(ctx) {
    const at = ctx.nominalTime ?? new Date();
    const matches = usersAtLocalTime(at, DIGEST_LOCAL_TIME, DEMO_DIGEST_USERS);
    for (const { user, localDate } of matches) {
      await ctx.enqueue(
        emailSend,
        { to: user.email, subject: `Your morning digest (${localDate})`, body: `Good morning! Here is your digest for ${localDate}.` },
        { jobId: localFanOutKey('digest.morning', user.id, localDate) },
      );
    }
    ctx.log.info({ at: at.toISOString(), emails: matches.length }, 'morning digest fanned out');
    return { emails: matches.length };
  },
});
