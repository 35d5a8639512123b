import type { RedisClient } from '@tickwork/core';
import type { Logger } from '@tickwork/core';
import { CARRIES_BATCHES_MEMBER, HOLDS_EARLY_MEMBER, PROCESS_MEMBER, workersKey } from '@tickwork/core';
import { headStartGauge } from '../health/health-metrics.js';

/** How often the scheduler reads the worker registry to see whether every worker holds early occurrences. */
export const HEAD_START_CHECK_MS = 5_000;

/** The head start the scheduler adds on-time occurrences with, as the registered workers allow (see createHeadStart). */
export interface HeadStart {
  /** The configured head start while every registered worker process holds early occurrences, else 0. */
  current(): number;
  /**
   * Whether every registered worker process runs occurrences delivered in batches (`b:<tag>`; occurrence
   * batches, the scheduler's SCHEDULE_BATCH_MAX): a worker without it would fail a batch as an unknown job.
   * Read with the head start; true when none is registered (none can take a batch).
   */
  batches(): boolean;
  /** Reads the registry now (the scheduler awaits one before its first tick). */
  refresh(): Promise<void>;
  /** Reads it every HEAD_START_CHECK_MS (or `everyMs`) until stop(). */
  start(): void;
  stop(): void;
}

/**
 * A head start only where it is safe. An occurrence added ahead of its time is held until its time by the
 * worker's onTime stage; a worker process without that stage (an earlier tickwork, during a rolling
 * upgrade that replaces the scheduler first) would run it up to the head start early, and a handler that
 * reads the clock (a midnight run billing "today") would see the day before. Worker processes that hold
 * register `h:<tag>` beside their `p:<tag>` in the worker registry (recovery/worker-registry.ts); the
 * scheduler reads the registry every few seconds and adds occurrences ahead only while every registered
 * process holds them. With none registered (no worker yet) nothing can run early, so the head start holds.
 *
 * A process stays registered until it stops cleanly or, killed, until it is forgotten (the worker's lease
 * plus its dead-after time); an earlier worker started between two reads may take an occurrence added
 * ahead before the next read sees it. A read that fails keeps the last answer.
 */
export function createHeadStart(opts: { redis: RedisClient; prefix: string; configuredMs: number; log: Logger; everyMs?: number; readBatches?: boolean }): HeadStart {
  const key = workersKey(opts.prefix);
  /** Unknown until the first read: then it says which, and after that whenever it changes. */
  let allowed: boolean | undefined;
  let carried: boolean | undefined;
  let timer: NodeJS.Timeout | undefined;
  let failing = false;

  async function refresh(): Promise<void> {
    if (opts.configuredMs <= 0 && !opts.readBatches) return;
    let members: string[];
    try {
      members = await opts.redis.zrange(key, '0', '-1');
    } catch (err) {
      if (!failing) opts.log.warn({ err: { message: (err as Error).message } }, 'could not read the worker registry for the head start; keeping the last answer');
      failing = true;
      return;
    }
    failing = false;
    const tagsOf = (kind: string) => members.filter((m) => m.startsWith(kind)).map((m) => m.slice(kind.length));
    const holders = new Set(tagsOf(HOLDS_EARLY_MEMBER));
    const processes = tagsOf(PROCESS_MEMBER);
    const lacking = processes.filter((tag) => !holders.has(tag));
    if (opts.readBatches) {
      const carriers = new Set(tagsOf(CARRIES_BATCHES_MEMBER));
      const without = processes.filter((tag) => !carriers.has(tag));
      const carry = without.length === 0;
      if (carry !== carried && carried !== undefined && !carry)
        opts.log.warn({ processes: without.slice(0, 10), count: without.length }, 'worker processes that do not run batched occurrences (an earlier tickwork) are registered: occurrences are added one job each until they are gone');
      carried = carry;
    }
    if (opts.configuredMs <= 0) return;
    const now = lacking.length === 0;
    if (now === allowed) return;
    allowed = now;
    headStartGauge.set(allowed ? opts.configuredMs / 1000 : 0);
    if (allowed) opts.log.info({ headStartMs: opts.configuredMs }, 'on-time occurrences are added their head start ahead of their time: every registered worker holds them until then');
    else
      opts.log.warn(
        { processes: lacking.slice(0, 10), count: lacking.length },
        'worker processes that do not hold early occurrences (an earlier tickwork) are registered: on-time occurrences are added at their time, without a head start, until they are gone',
      );
  }

  return {
    current: () => (allowed === true ? opts.configuredMs : 0),
    batches: () => carried === true,
    refresh,
    start() {
      if ((opts.configuredMs <= 0 && !opts.readBatches) || timer) return;
      timer = setInterval(() => void refresh(), opts.everyMs ?? HEAD_START_CHECK_MS);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
    },
  };
}
