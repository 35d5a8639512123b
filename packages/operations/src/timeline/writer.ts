import { keyspaceOn, pipelineBySlot, type Logger, type RedisClient, type SlotCommand } from '@tickwork/core';
import { timelineKeyOf } from '@tickwork/schedules';
import { QUEUE_FIELDS, QUEUE_LAYOUT, SCHEDULE_FIELDS, SCHEDULE_LAYOUT, type TimelineLayout } from './layout.js';
import { TIMELINE_WRITE, writeCall, type TimelineRow } from './store.js';
import { bucketOf } from './buckets.js';
import { inc, Tally } from './tally.js';

/**
 * The worker's writer of timelines (layout.ts): runs count into memory (tally.ts) and are written every
 * `flushMs` (default TIMELINE_FLUSH_MS), one script call per queue or schedule that counted anything, all in
 * one pipeline (one per slot on a cluster), and once more when the worker stops. No job waits for it.
 * Counts a write could not deliver (Redis down) are kept and written with the next flush, up to a ring's span.
 */

export const TIMELINE_FLUSH_MS = 5000;

/** `<prefix>:timeline:<queue>`, under the queue's hash tag on a cluster (`<prefix>:{<queue>}:timeline:<queue>`), beside its jobs. */
export function queueTimelineKey(redis: RedisClient, prefix: string, queue: string): string {
  return `${keyspaceOn(redis, prefix, queue).runPrefix}:timeline:${queue}`;
}

const Q = QUEUE_FIELDS;

export type AttemptOutcome = 'completed' | 'failed' | 'retried';

/** A queue's counts: what the worker's stages add to as a job's attempt ends. */
export class QueueTimeline {
  constructor(readonly tally: Tally) {}

  /**
   * An attempt of a job's handler ended: `completed`, `failed` (no attempt follows) or `retried`; its run
   * time, and its wait (ready to started) on a job's first attempt, else a negative number (not counted).
   */
  attempt(outcome: AttemptOutcome, runMs: number, waitMs: number): void {
    // One look at the clock for the three counters.
    const row = this.tally.current();
    inc(row, Q[outcome]);
    inc(row, Q.run + bucketOf(runMs));
    if (waitMs >= 0) inc(row, Q.wait + bucketOf(waitMs));
  }

  /** A job of the queue failed before its handler ran (unknown job, invalid payload): a final failure, no run time. */
  refused(): void {
    this.tally.bump(Q.failed);
  }

  /** A job of the queue was moved to its dead-letter queue (counted by the move that made it). */
  deadLettered(): void {
    this.tally.bump(Q.deadLettered);
  }
}

const S = SCHEDULE_FIELDS;

export type ScheduleOutcome = 'completed' | 'failed' | 'retried' | 'missed' | 'skipped' | 'cancelled';

/** A catalog schedule's counts, per hour. */
export class ScheduleTimeline {
  constructor(readonly tally: Tally) {}

  /** The first attempt of an occurrence started `ms` after its nominal time. */
  lag(ms: number): void {
    this.tally.observe(S.lag, ms);
  }

  /** A run ended (`runMs`: its handler's time, when it ran) or was not run (missed, skipped, cancelled before it started). */
  ended(outcome: ScheduleOutcome, runMs?: number): void {
    this.tally.bump(S[outcome]);
    if (runMs !== undefined) this.tally.observe(S.run, runMs);
  }
}

export interface TimelineWriterOptions {
  redis: RedisClient;
  prefix: string;
  log: Logger;
  flushMs?: number;
  /** The clock runs are counted by (tests simulate days with it). */
  clock?: () => number;
  /** The process's outage log: while Redis is known to be down, a failed flush is its to report. */
  outage?: { readonly down: boolean } | undefined;
}

interface Entry {
  key: string;
  tally: Tally;
}

export class TimelineWriter {
  private readonly queues = new Map<string, QueueTimeline>();
  private readonly schedules = new Map<string, ScheduleTimeline>();
  private readonly entries: Entry[] = [];
  private readonly clock: () => number;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private failing = false;

  constructor(private readonly o: TimelineWriterOptions) {
    this.clock = o.clock ?? Date.now;
  }

  /** The counts of `queue` (made on first use and kept: a stage looks it up per job, a Map lookup). */
  queue(name: string): QueueTimeline {
    let q = this.queues.get(name);
    if (!q) this.queues.set(name, (q = new QueueTimeline(this.track(queueTimelineKey(this.o.redis, this.o.prefix, name), QUEUE_LAYOUT))));
    return q;
  }

  /** The counts of catalog schedule `id` (runtime schedules have none: there may be millions). */
  schedule(id: string): ScheduleTimeline {
    let s = this.schedules.get(id);
    if (!s) this.schedules.set(id, (s = new ScheduleTimeline(this.track(timelineKeyOf(this.o.prefix, id), SCHEDULE_LAYOUT))));
    return s;
  }

  private track(key: string, layout: TimelineLayout): Tally {
    // Rows wait at most a ring's span for Redis: the rings have no slot for older ones.
    const ring = layout.rings[0] as { slots: number };
    const tally = new Tally(layout, this.clock, ring.slots);
    this.entries.push({ key, tally });
    return tally;
  }

  /** Flushes every `flushMs` until stop(). */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flush(), this.o.flushMs ?? TIMELINE_FLUSH_MS);
    this.timer.unref();
  }

  /** Stops the timer and writes what is left. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  /** Writes the counts so far (after a flush under way). Never throws: a failed write is kept for the next. */
  flush(): Promise<void> {
    const next = (this.flushing ?? Promise.resolve())
      .then(() => this.flushOnce())
      .catch((err: unknown) => this.o.log.warn({ err: { message: (err as Error).message } }, "charts' history flush failed"));
    this.flushing = next;
    void next.then(() => {
      if (this.flushing === next) this.flushing = undefined;
    });
    return next;
  }

  private async flushOnce(): Promise<void> {
    const work: { entry: Entry; rows: TimelineRow[]; command: SlotCommand; lua: () => Promise<unknown> }[] = [];
    for (const entry of this.entries) {
      const rows = entry.tally.take();
      if (rows.length === 0) continue;
      const call = writeCall(entry.key, entry.tally.layout, rows);
      work.push({
        entry,
        rows,
        command: ['evalsha', TIMELINE_WRITE.sha, 1, entry.key, ...call.argv],
        lua: () => this.o.redis.eval(TIMELINE_WRITE.lua, 1, entry.key, ...call.argv),
      });
    }
    if (work.length === 0) return;
    let errors = 0;
    let firstError: Error | undefined;
    try {
      const replies = await pipelineBySlot(this.o.redis, work.map((w) => w.command), (c) => String(c[3]));
      for (const [i, w] of work.entries()) {
        let err = replies[i]?.[0] ?? null;
        if (err?.message.includes('NOSCRIPT')) err = await w.lua().then(() => null, (e: Error) => e);
        if (err) {
          errors++;
          firstError ??= err;
          w.entry.tally.giveBack(w.rows);
        }
      }
    } catch (err) {
      errors = work.length;
      firstError = err as Error;
      for (const w of work) w.entry.tally.giveBack(w.rows);
    }
    if (errors > 0) {
      // Once per failing streak: the counts wait in memory for Redis.
      if (!this.failing && !this.o.outage?.down) this.o.log.warn({ err: { message: firstError?.message }, timelines: errors }, 'could not write the charts\' history; keeping the counts for the next flush');
      this.failing = true;
    } else if (this.failing) {
      this.failing = false;
      this.o.log.info('charts\' history written again');
    }
  }
}
