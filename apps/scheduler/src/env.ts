import { MAX_OCCURRENCE_BATCH, alertWebhookUrl, choice, decimal, logLevel, metricsToken, nodeEnv, parseEnv, port, positiveInt, queuePrefix, redisStartupTimeoutMs, redisEnv, wholeNumber } from '@tickwork/core';
import { DEFAULT_HEAD_START_MS, DEFAULT_SCHEDULE_BATCH_MAX, DEFAULT_SCHEDULER_DEAD_AFTER_MS, DEFAULT_SCHEDULER_HEARTBEAT_MS, MAX_HEAD_START_MS } from '@tickwork/schedules';
import { z } from 'zod';
import { parseSpeedup } from './speedup.js';

const RATIO = 'must be a ratio between 0.1 and 0.99, e.g. 0.8';

const schema = z
  .object({
    ...redisEnv,
    REDIS_STARTUP_TIMEOUT_MS: redisStartupTimeoutMs,
    QUEUE_PREFIX: queuePrefix,
    PORT: port(3001),
    METRICS_TOKEN: metricsToken,
    LOG_LEVEL: logLevel(),
    NODE_ENV: nodeEnv,
    /** How often registrations are reconciled again after start (catches a deleted registration, say). */
    RECONCILE_INTERVAL_MS: positiveInt(60_000),
    /** How often the dispatcher claims due entries (O(due) per tick, so a short tick is cheap when idle). */
    SCHEDULE_TICK_MS: positiveInt(250),
    /** Occurrences due within this window are claimed ahead and added to their queue at their exact time. */
    SCHEDULE_LOOKAHEAD_MS: wholeNumber(1000, { min: 0, format: 'must be a whole number of ms, 0 or more' }),
    /**
     * Occurrences due within this window (beyond the look-ahead) are claimed, added to their queue as delayed
     * jobs and committed ahead of their time, then moved to the head of the wait list at their time: a herd's
     * adds are done before its minute. 0 (or at most the look-ahead): added at their time only.
     */
    SCHEDULE_ADD_AHEAD_MS: wholeNumber(30_000, { min: 0, format: 'must be a whole number of ms, 0 or more' }),
    /**
     * How long before its time an on-time occurrence is added to its queue; the worker holds it until its time
     * (0: added at its time). Within the look-ahead: an occurrence is claimed at most that far ahead.
     */
    SCHEDULE_HEAD_START_MS: wholeNumber(DEFAULT_HEAD_START_MS, {
      min: 0,
      max: MAX_HEAD_START_MS,
      format: `must be a whole number of ms from 0 to ${MAX_HEAD_START_MS}`,
      tooBig: `must be at most ${MAX_HEAD_START_MS} ms: a worker holds an early occurrence at most that long`,
    }),
    /**
     * Occurrences added ahead that share a job and a time travel as batches of up to this many: one BullMQ
     * job each batch, each occurrence still its own run (docs/schedules.md, "Batch delivery"). 1: one job
     * an occurrence. Used while every registered worker runs batches.
     */
    SCHEDULE_BATCH_MAX: wholeNumber(DEFAULT_SCHEDULE_BATCH_MAX, {
      min: 1,
      max: MAX_OCCURRENCE_BATCH,
      format: `must be a whole number from 1 to ${MAX_OCCURRENCE_BATCH}`,
      tooBig: `must be at most ${MAX_OCCURRENCE_BATCH}`,
    }),
    /** How long a dispatcher's claim is held; a replica that dies mid-tick leaves its claims to another after this at the latest. */
    SCHEDULE_LEASE_MS: positiveInt(10_000),
    /**
     * The scheduler registry: every scheduler beats this often, and one silent for SCHEDULER_DEAD_AFTER_MS counts
     * as dead: a live scheduler releases its claims and the live ones take its schedules over (dispatch/takeover.ts).
     */
    SCHEDULER_HEARTBEAT_MS: positiveInt(DEFAULT_SCHEDULER_HEARTBEAT_MS),
    SCHEDULER_DEAD_AFTER_MS: positiveInt(DEFAULT_SCHEDULER_DEAD_AFTER_MS),
    /** An occurrence noticed later than this after its time counts as missed (missed-run policy applies). */
    SCHEDULE_GRACE_MS: positiveInt(60_000),
    /** Staging only: `every=10s` runs every schedule on that interval. Refused when NODE_ENV=production. */
    SCHEDULE_SPEEDUP: z
      .string()
      .optional()
      .transform((v, ctx) => {
        if (v === undefined || v === '') return undefined;
        const parsed = parseSpeedup(v);
        if (typeof parsed === 'string') {
          ctx.addIssue({ code: 'custom', message: parsed });
          return z.NEVER;
        }
        return parsed;
      }),
    JOBS_MODULE: z.string().optional(),
    /** How often the watchdog judges every schedule's health and alerts on a schedule gone stale. */
    SCHEDULE_WATCHDOG_INTERVAL_MS: positiveInt(30_000),
    /** Where stale/recovered schedule alerts are POSTed (the worker posts dead letters to its own). */
    ALERT_WEBHOOK_URL: alertWebhookUrl,
    ALERT_WEBHOOK_TIMEOUT_MS: positiveInt(5000),
    /** Share of Redis's maxmemory above which one redis_memory_high alert is raised. */
    REDIS_MEMORY_ALERT_RATIO: decimal(0.8, { min: 0.1, max: 0.99, format: RATIO }),
    /** How often Redis memory is checked and the capacity gauges of /metrics are refreshed. */
    CAPACITY_CHECK_INTERVAL_MS: positiveInt(30_000),
    /** The dashboard's Redis memory chart: `on` samples INFO memory once a minute into its history; `off` does not. */
    CHART_HISTORY: choice(['on', 'off'], 'on'),
  })
  .superRefine((env, ctx) => {
    if (env.SCHEDULE_LOOKAHEAD_MS * 2 > env.SCHEDULE_LEASE_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['SCHEDULE_LOOKAHEAD_MS'],
        message: `must be at most half of SCHEDULE_LEASE_MS (${env.SCHEDULE_LEASE_MS}): occurrences are held up to the look-ahead under a claim that must not expire meanwhile`,
      });
    }
    if (env.SCHEDULER_DEAD_AFTER_MS < 3 * env.SCHEDULER_HEARTBEAT_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['SCHEDULER_DEAD_AFTER_MS'],
        message: `must be at least 3 times SCHEDULER_HEARTBEAT_MS (${3 * env.SCHEDULER_HEARTBEAT_MS}): a late beat must not look like a death`,
      });
    }
    if (env.SCHEDULE_SPEEDUP !== undefined && env.NODE_ENV === 'production') {
      ctx.addIssue({
        code: 'custom',
        path: ['SCHEDULE_SPEEDUP'],
        message: 'is refused when NODE_ENV=production (it would run every schedule on a staging interval); unset it',
      });
    }
  });

export type SchedulerEnv = z.output<typeof schema>;

export function loadSchedulerEnv(env: Record<string, string | undefined>): SchedulerEnv {
  return parseEnv('scheduler', schema, env);
}
