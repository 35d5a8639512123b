/**
 * billing.charge-monthly: charges every customer once per billing cycle (midnight UTC on the 1st).
 *
 * Idempotent because: each customer's charge is a Redis step keyed `charge:<customer>` under the run's
 * idempotency key (`<schedule>@<nominal time>`): the charge (a write to the demo ledger) and the step's
 * record commit together in one script, only while the run owns its lease, so a retry or a redelivery
 * after a crash skips exactly the customers already charged. Each charge also carries its step's own key
 * (`<run key>/step/charge:<customer>`), as a real payment provider's call would. The cycle comes from the
 * nominal fire time, not the wall clock, so a run that starts late still bills the right month.
 */
import { defineJob } from 'tickwork';
import { DateTime } from 'luxon';
import { z } from 'zod';
import { DEMO_CUSTOMERS, DEMO_KEYS, type ChargeRecord } from '../demo-data.js';

export const billingChargeMonthly = defineJob({
  name: 'billing.charge-monthly',
  queue: 'billing',
  description: 'Charge every customer for the month.',
  schema: z.object({
    /** Billing cycle `YYYY-MM`; by default the month of the nominal fire time (or now, when enqueued by hand). */
    cycle: z.string().regex(/^\d{4}-\d{2}$/, 'expected YYYY-MM').optional(),
    /** Pause between customers; lets tests and demos interrupt a run midway. */
    pauseMsPerCustomer: z.number().int().min(0).max(60_000).default(0),
  }),
  // A billing cycle must never be skipped: after an outage the latest missed cycle runs once (within a week).
  schedule: { pattern: '0 0 1 * *', tz: 'UTC', missed: 'once', catchUpWindow: { days: 7 } },
  retry: { attempts: 5, backoff: { type: 'exponential', delayMs: 5000 } },
  timeoutMs: 30 * 60_000,
  async handler(ctx) {
    const cycle = ctx.data.cycle ?? DateTime.fromJSDate(ctx.nominalTime ?? new Date(), { zone: 'UTC' }).toFormat('yyyy-MM');
    let totalCents = 0;
    for (const customer of DEMO_CUSTOMERS) {
      ctx.signal.throwIfAborted();
      const record = await ctx.redisStep(`charge:${customer.id}`, (tx, step) => {
        const charge: ChargeRecord = {
          customerId: customer.id,
          cycle,
          amountCents: customer.planCents,
          idempotencyKey: step.key,
          chargedAt: new Date().toISOString(),
        };
        tx.rpush(DEMO_KEYS.charges, JSON.stringify(charge));
        return charge;
      });
      totalCents += record.amountCents;
      if (ctx.data.pauseMsPerCustomer > 0) await sleep(ctx.data.pauseMsPerCustomer, ctx.signal);
    }
    ctx.log.info({ cycle, customers: DEMO_CUSTOMERS.length, totalCents }, 'billing cycle charged');
    return { cycle, customers: DEMO_CUSTOMERS.length, totalCents };
  },
});

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    }, { once: true });
  });
}
