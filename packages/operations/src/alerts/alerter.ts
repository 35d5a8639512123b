import type { RedisClient } from '@tickwork/core';
import type { DeadLetter } from '../dlq/entry.js';
import type { Logger } from '@tickwork/core';
import { keyspaceOn } from '@tickwork/core';
import { alertsEmitted, deadLettered } from './metrics.js';
import { WebhookSender, type WebhookOptions } from './webhook.js';

export const DEFAULT_ESCALATE_AFTER = 3;

export interface DeadLetterAlert {
  type: 'dead_letter';
  queue: string;
  dlqQueue: string;
  dlqJobId: string;
  job: string;
  jobId: string;
  reason: string;
  attemptsMade: number;
  idempotencyKey: string;
  nominalTime: string | null;
  scheduleId: string | null;
  redriveCount: number;
  lastFailedAt: string;
}

export interface EscalationAlert {
  type: 'escalation';
  queue: string;
  job: string;
  scheduleId: string;
  consecutiveFailures: number;
  lastReason: string;
  lastDlqJobId: string;
  message: string;
}

/**
 * The dead-man's switch: a schedule with no success within two of its intervals (its runs stopped
 * happening, or keep being skipped or lost), and the all-clear when it succeeds again.
 */
export interface ScheduleHealthAlert {
  type: 'schedule_stale' | 'schedule_recovered';
  schedule: string;
  queue: string;
  reason: string;
  lastSuccessAt: string | null;
  lastExpectedAt: string | null;
  message: string;
}

/** A scheduled run still going after its schedule's `slowAfter` (once per occurrence). */
export interface SlowRunAlert {
  type: 'schedule_slow_run';
  schedule: string;
  queue: string;
  occurrence: string;
  nominal: string;
  startedAt: string;
  runningForMs: number;
  slowAfterMs: number;
  message: string;
}

/** Redis passed the memory alert ratio of its maxmemory (`redis_memory_high`), or fell back below it (`redis_memory_ok`). */
export interface RedisMemoryAlert {
  type: 'redis_memory_high' | 'redis_memory_ok';
  usedBytes: number;
  maxBytes: number;
  ratio: number;
  threshold: number;
  message: string;
}

export type Alert = DeadLetterAlert | EscalationAlert | ScheduleHealthAlert | SlowRunAlert | RedisMemoryAlert;

export interface Alerter {
  /** Call once per new DLQ entry. Never throws into the caller and never waits for the webhook. */
  deadLettered(dl: DeadLetter): Promise<void>;
  /** The scheduler's watchdog saw a schedule go stale, recover, or a run go slow (one call per event across replicas). */
  scheduleHealth(alert: ScheduleHealthAlert | SlowRunAlert): void;
  /** The scheduler's memory check saw Redis cross the alert ratio (one call per transition across replicas). */
  redisMemory(alert: RedisMemoryAlert): void;
  /** A scheduled run completed: its schedule's run of failures is over. */
  scheduledRunSucceeded(queue: string, scheduleId: string): Promise<void>;
  /** Waits for webhook deliveries in flight, at most `timeoutMs`. */
  settle(timeoutMs: number): Promise<void>;
}

export interface AlerterOptions {
  log: Logger;
  redis: RedisClient;
  prefix: string;
  /** Consecutive failed runs of one schedule that trigger one escalated alert. */
  escalateAfter?: number;
  webhook?: Omit<WebhookOptions, 'log'>;
}

/**
 * Alerts on dead letters: a structured `alert` log line and a counter for each entry, a webhook POST when
 * configured, and one escalation when a schedule's runs keep failing. The consecutive-failure count lives
 * in Redis so every worker process adds to the same count, and INCR makes "reached N" happen exactly once.
 */
/**
 * A schedule's consecutive-failure count is forgotten this long after its latest failure (a schedule
 * removed while failing leaves nothing behind for ever); a success deletes it at once.
 */
export const FAILURE_COUNT_TTL_MS = 30 * 24 * 3600_000;

export function createAlerter(opts: AlerterOptions): Alerter {
  const escalateAfter = opts.escalateAfter ?? DEFAULT_ESCALATE_AFTER;
  const webhook = opts.webhook ? new WebhookSender({ ...opts.webhook, log: opts.log }) : undefined;
  // Under the queue's tag on a cluster (redis/keyspace.ts), as everything else about the queue's runs.
  const counterKey = (queue: string, scheduleId: string) => `${keyspaceOn(opts.redis, opts.prefix, queue).runPrefix}:meta:consecutive-failures:${queue}:${scheduleId}`;

  /**
   * Successes' resets asked for in this turn, by queue (one slot on a cluster): one DEL per queue once the
   * turn ends, rather than one per run (a herd of scheduled runs completes thousands a second).
   */
  const resets = new Map<string, Set<string>>();
  let resetting: Promise<void> | undefined;
  const sendResets = async (): Promise<void> => {
    const batches = [...resets.values()];
    resets.clear();
    resetting = undefined;
    await Promise.all(batches.map((keys) => opts.redis.del(...keys)));
  };

  const emit = (alert: Alert) => {
    alertsEmitted.inc({ type: alert.type });
    opts.log.error({ alert }, 'alert');
    webhook?.send(alert);
  };

  return {
    async deadLettered({ dlqQueue, dlqJobId, entry }) {
      deadLettered.inc({ queue: entry.originQueue, job: entry.jobName });
      emit({
        type: 'dead_letter',
        queue: entry.originQueue,
        dlqQueue,
        dlqJobId,
        job: entry.jobName,
        jobId: entry.originalJobId,
        reason: entry.failureReason,
        attemptsMade: entry.attemptsMade,
        idempotencyKey: entry.idempotencyKey,
        nominalTime: entry.nominalTime,
        scheduleId: entry.scheduleId,
        redriveCount: entry.redriveCount,
        lastFailedAt: entry.lastFailedAt,
      });
      // A re-driven run failing again is the same run, not another run of the schedule in a row.
      if (entry.scheduleId === null || entry.redriveCount > 0) return;
      try {
        const key = counterKey(entry.originQueue, entry.scheduleId);
        const failures = await opts.redis.incr(key);
        await opts.redis.pexpire(key, FAILURE_COUNT_TTL_MS);
        if (failures !== escalateAfter) return;
        emit({
          type: 'escalation',
          queue: entry.originQueue,
          job: entry.jobName,
          scheduleId: entry.scheduleId,
          consecutiveFailures: failures,
          lastReason: entry.failureReason,
          lastDlqJobId: dlqJobId,
          message: `schedule "${entry.scheduleId}" failed ${failures} runs in a row; its entries are in ${dlqQueue}`,
        });
      } catch (err) {
        opts.log.warn({ err: { message: (err as Error).message }, schedule: entry.scheduleId }, 'could not update the consecutive failure count');
      }
    },
    scheduleHealth: emit,
    redisMemory: emit,
    scheduledRunSucceeded(queue, scheduleId) {
      let keys = resets.get(queue);
      if (!keys) resets.set(queue, (keys = new Set()));
      keys.add(counterKey(queue, scheduleId));
      return (resetting ??= new Promise<void>((resolve) => setImmediate(resolve)).then(sendResets));
    },
    settle: (timeoutMs) => webhook?.settle(timeoutMs) ?? Promise.resolve(),
  };
}
