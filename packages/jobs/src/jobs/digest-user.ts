/**
 * digest.user: one user's morning digest, fired by that user's own runtime schedule
 * (`digest.user:user-<id>`, 09:00 every day in her timezone; see examples/user-schedules.ts). The
 * per-user alternative to digest.morning's fan-out: one schedule per user, each with its own history.
 *
 * Idempotent because: the send is a Redis step under the run's idempotency key, which for a scheduled run
 * is the schedule id and the occurrence's nominal time, so a retry or redelivery of that occurrence does
 * not send twice; each occurrence is enqueued once, under a deterministic job id.
 */
import { defineJob, UnrecoverableError } from 'tickwork';
import { DateTime } from 'luxon';
import { z } from 'zod';
import { DEMO_DIGEST_USERS, DEMO_KEYS } from '../demo-data.js';

export const digestUser = defineJob({
  name: 'digest.user',
  queue: 'email',
  description: "One user's morning digest, from her own runtime schedule.",
  schema: z.object({ userId: z.string().min(1) }),
  async handler(ctx) {
    // The demo's user directory; an application would read its own.
    const user = DEMO_DIGEST_USERS.find((u) => u.id === ctx.data.userId);
    if (!user) throw new UnrecoverableError(`no user ${ctx.data.userId}`); // retrying would not make her exist
    const localDate = DateTime.fromJSDate(ctx.nominalTime ?? new Date(), { zone: user.tz }).toISODate() ?? '';
    await ctx.redisStep('send', (tx) => {
      tx.rpush(
        DEMO_KEYS.outbox,
        JSON.stringify({ to: user.email, subject: `Your morning digest (${localDate})`, idempotencyKey: ctx.idempotencyKey, sentAt: new Date().toISOString() }),
      );
    });
    ctx.log.info({ userId: user.id, localDate }, 'personal digest sent');
    return { localDate };
  },
});
