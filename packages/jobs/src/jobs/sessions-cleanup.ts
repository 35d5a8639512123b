/**
 * sessions.cleanup: every 30 minutes, deletes expired sessions.
 *
 * Idempotent because: deleting what expired before a cut-off is the same operation however often it
 * runs; a second run finds nothing left to delete.
 */
import { defineJob } from 'tickwork';
import { z } from 'zod';
import { DEMO_KEYS } from '../demo-data.js';

export const sessionsCleanup = defineJob({
  name: 'sessions.cleanup',
  queue: 'maintenance',
  description: 'Delete expired sessions.',
  schema: z.object({}),
  schedule: { every: { minutes: 30 }, tz: 'UTC' },
  async handler(ctx) {
    const cutoff = (ctx.nominalTime ?? new Date()).getTime();
    const removed = await ctx.redis.zremrangebyscore(DEMO_KEYS.sessions, '-inf', cutoff);
    ctx.log.info({ removed }, 'expired sessions removed');
    return { removed };
  },
});
