/**
 * email.send: delivers one email (to the demo outbox).
 *
 * Idempotent because: the send (a write to the demo outbox) is a Redis step, committed together with the
 * step's record under the run's idempotency key, and producers that fan out (digest.weekly) give each
 * email a deterministic job id, so a duplicate enqueue is a no-op.
 */
import { defineJob } from 'tickwork';
import { z } from 'zod';
import { DEMO_KEYS } from '../demo-data.js';

export const emailSend = defineJob({
  name: 'email.send',
  queue: 'email',
  description: 'Send one email. Enqueued on demand.',
  schema: z.object({
    to: z.email(),
    subject: z.string().min(1).max(200),
    body: z.string().max(100_000),
  }),
  retry: { attempts: 5, backoff: { type: 'exponential', delayMs: 2000 } },
  async handler(ctx) {
    await ctx.redisStep('send', (tx) => {
      tx.rpush(DEMO_KEYS.outbox, JSON.stringify({ ...ctx.data, idempotencyKey: ctx.idempotencyKey, sentAt: new Date().toISOString() }));
    });
    ctx.log.info({ to: ctx.data.to }, 'email sent');
    return { sent: true };
  },
});
