import { keyspaceOn, mastersChangedAt, queueStructureKey, watchdogHeals, type Logger, type RedisClient } from '@tickwork/core';
import type { Worker } from 'bullmq';

/** A queue's consumer as the watchdog sees it: its BullMQ Worker of now and how many of its jobs run. */
export interface WatchedConsumer {
  readonly queue: string;
  readonly worker: Worker;
}

export interface ConsumerWatchdogOptions {
  /** The consumers to watch (one BullMQ Worker per queue; batch queues are not watched). */
  consumers: readonly WatchedConsumer[];
  /**
   * The watchdog's own command connection, for the cheap reads of each queue's waiting jobs: its reads never
   * queue behind another user's writes on a Redis that does not take them. Closed by stop().
   */
  redis: RedisClient;
  prefix: string;
  concurrency: number;
  /** Jobs of `queue` this process runs now. */
  running(queue: string): number;
  /** WORKER_WATCHDOG_MS: how long waiting jobs may stay untaken by a consumer with free slots. */
  afterMs: number;
  /** Renews the consumer's connections (renewWorkerConnections, @tickwork/bullmq-engine). */
  heal(worker: Worker): Promise<number>;
  /** What the consumer is doing, for the log line of a heal that follows another without a take (consumerState). */
  stateOf?(worker: Worker): Promise<Record<string, unknown>>;
  log: Logger;
  /** When this process last saw a cluster failover (default: the cluster watch's mastersChangedAt). */
  failoverAt?: () => number;
}

/** For this long after a failover the watchdog looks every FAILOVER_TICK_MS and heals after FAILOVER_AFTER_MS. */
export const FAILOVER_WINDOW_MS = 30_000;
export const FAILOVER_AFTER_MS = 1000;
const FAILOVER_TICK_MS = 250;

export interface ConsumerWatchdog {
  stop(): void;
}

/** What one look at a queue found: jobs a consumer could take now (wait, prioritized, delayed and due). */
interface QueueLook {
  ready: number;
  /** Paused or rate limited: its jobs wait on purpose. */
  held: boolean;
}

/**
 * The consumer watchdog (issue 37 §2: a queue that never goes silent). A consumer whose connection died
 * without its socket saying so (a frozen master, a failover under it: BullMQ #4138, ioredis #559) takes no
 * job again and logs nothing. Every tick this looks, for each queue, at what a consumer could take now;
 * when a consumer with free slots has left such jobs untaken for `afterMs` (no job became active on it
 * meanwhile), it logs one warning, counts `tickwork_worker_watchdog_heals_total{queue}` and renews the
 * consumer's connections (its in-flight jobs go on: their commands are sent again on the new sockets). It
 * heals again only after another wait without a take, twice as long each time (healAfterMs). While a queue's look fails (Redis does not
 * answer) nothing is judged: an outage is the outage log's; the clock starts once the look is answered.
 * For FAILOVER_WINDOW_MS after this process saw a cluster failover, when a consumer stuck by it is likeliest,
 * it looks four times a second and heals after FAILOVER_AFTER_MS (if `afterMs` is not shorter).
 */
export function startConsumerWatchdog(opts: ConsumerWatchdogOptions): ConsumerWatchdog {
  const tickMs = Math.max(200, Math.min(1000, Math.floor(opts.afterMs / 3)));
  const failoverAt = opts.failoverAt ?? mastersChangedAt;
  let lookedAt = 0;
  /** Per queue: since when jobs have waited untaken with free slots, or undefined. */
  const since = new Map<string, number>();
  const takenAt = new Map<string, number>();
  /** Per queue: heals since the consumer last took a job (each waits twice as long as the one before). */
  const streak = new Map<string, number>();
  const listening = new WeakSet<Worker>();
  let busy = false;

  const check = async (c: WatchedConsumer, afterMs: number): Promise<void> => {
    if (!listening.has(c.worker)) {
      listening.add(c.worker);
      c.worker.on('active', () => {
        takenAt.set(c.queue, Date.now());
        streak.delete(c.queue);
      });
    }
    const free = opts.running(c.queue) < opts.concurrency && c.worker.isRunning() && !c.worker.isPaused();
    if (!free) return void since.delete(c.queue);
    const look = await lookAt(opts.redis, opts.prefix, c.queue).catch(() => undefined);
    const now = Date.now();
    // Not answered (an outage, a frozen master): nothing to judge by; the clock starts again once it is.
    if (!look || look.held || look.ready === 0) return void since.delete(c.queue);
    const from = Math.max(since.get(c.queue) ?? now, takenAt.get(c.queue) ?? 0);
    since.set(c.queue, from);
    if (now - from < healAfterMs(afterMs, streak.get(c.queue) ?? 0)) return;
    // A heal after one that did not help: what the consumer is doing, to find what holds it.
    const state = (streak.get(c.queue) ?? 0) > 0 && opts.stateOf ? await opts.stateOf(c.worker).catch(() => undefined) : undefined;
    opts.log.warn(
      { queue: c.queue, ready: look.ready, untakenForMs: now - from, running: opts.running(c.queue), concurrency: opts.concurrency, ...(state && { consumer: state }) },
      "watchdog: the queue's jobs have waited untaken while this worker had free slots; renewing the consumer's Redis connections",
    );
    watchdogHeals.inc({ queue: c.queue });
    streak.set(c.queue, (streak.get(c.queue) ?? 0) + 1);
    since.set(c.queue, now);
    const renewed = await opts.heal(c.worker).catch((err: unknown) => {
      opts.log.warn({ queue: c.queue, err: { message: (err as Error).message } }, 'watchdog: renewing the connections failed; trying again after WORKER_WATCHDOG_MS');
      return 0;
    });
    opts.log.info({ queue: c.queue, renewed }, 'watchdog: consumer connections renewed');
  };

  const timer = setInterval(() => {
    const now = Date.now();
    const afterMs = watchdogAfterMs(opts.afterMs, now - failoverAt());
    if (busy || (afterMs === opts.afterMs && now - lookedAt < tickMs)) return;
    busy = true;
    lookedAt = now;
    void Promise.all(opts.consumers.map((c) => check(c, afterMs).catch(() => undefined))).finally(() => (busy = false));
  }, Math.min(tickMs, FAILOVER_TICK_MS));
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      opts.redis.disconnect();
    },
  };
}

/** How long ready jobs may wait untaken before a heal: `afterMs`, shorter within FAILOVER_WINDOW_MS of a failover. */
export function watchdogAfterMs(afterMs: number, sinceFailoverMs: number): number {
  return sinceFailoverMs >= 0 && sinceFailoverMs < FAILOVER_WINDOW_MS ? Math.min(afterMs, FAILOVER_AFTER_MS) : afterMs;
}

/** The longest a consumer that keeps leaving jobs untaken waits between two heals. */
export const MAX_HEAL_INTERVAL_MS = 30_000;

/**
 * How long jobs wait untaken before the next heal: `afterMs`, doubled for each heal since the consumer last
 * took a job (at most MAX_HEAL_INTERVAL_MS, never below `afterMs`). A reconnect on a loaded machine or
 * during a failover can take longer than `afterMs`; renewing the connections again before it is done would
 * only start it over.
 */
export function healAfterMs(afterMs: number, heals: number): number {
  return Math.max(afterMs, Math.min(afterMs * 2 ** Math.min(heals, 10), MAX_HEAL_INTERVAL_MS));
}

/**
 * One round trip of reads (no script: they pass while Redis refuses writes, and cost Redis next to
 * nothing): the wait list, the prioritized set, delayed jobs already due (BullMQ scores them
 * `timestamp * 0x1000 + counter`), the paused flag and the rate limiter's key.
 */
async function lookAt(redis: RedisClient, prefix: string, queue: string): Promise<QueueLook | undefined> {
  const ks = keyspaceOn(redis, prefix, queue);
  const key = (suffix: string) => queueStructureKey(ks, queue, suffix);
  const replies = await redis
    .pipeline()
    .llen(key('wait'))
    .zcard(key('prioritized'))
    .zcount(key('delayed'), 0, (Date.now() + 1) * 0x1000)
    .hexists(key('meta'), 'paused')
    .pttl(key('limiter'))
    .exec();
  if (!replies || replies.some(([err]) => err)) return undefined;
  const n = (i: number) => Number(replies[i]?.[1] ?? 0);
  return { ready: n(0) + n(1) + n(2), held: n(3) === 1 || n(4) > 0 };
}
