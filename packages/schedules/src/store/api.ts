import type { DurationLike } from 'luxon';
import type { AnyJob, JobInput, ScheduleCommon } from '@tickwork/core';
import type { SchedulePolicies } from '@tickwork/core';

/**
 * The schedule API: one engine for catalog schedules (code, id = job name) and runtime schedules (data
 * the application writes, id of its own choosing, e.g. `reports.weekly:user-42`). Both are a record in
 * the schedule store plus an entry in the due index; the scheduler fires both the same way.
 */

/**
 * What `upsert` takes: a catalog schedule's fields (ScheduleCommon: tz, dst, missed, catchUpWindow,
 * maxCatchUp, overlap, slowAfter; pattern or every) plus the job it runs, typed like `enqueue`, or for the
 * CLI its name. `data` is the job's input, validated against its schema when upserted.
 */
export type ScheduleInput<J extends AnyJob = AnyJob> = Omit<ScheduleCommon, 'data'> & {
  job: J | string;
  data?: JobInput<J>;
  /** Opt in to the watchdog's stale and slow-run alerts (always on for catalog schedules). Default false. */
  watch?: boolean;
  /** Occurrences kept in the schedule's history (last success and last failure are kept apart). */
  history?: number;
} & ({ pattern: string; every?: never } | { every: DurationLike; pattern?: never });

export type ScheduleSource = 'catalog' | 'runtime';

/** A schedule as stored, with every default filled in. */
export interface ScheduleView {
  id: string;
  source: ScheduleSource;
  job: string;
  queue: string;
  pattern?: string;
  everyMs?: number;
  tz: string;
  data: unknown;
  policies: SchedulePolicies;
  /** With a `spread` window: how long after each pattern time this schedule fires (0 without one). */
  spreadOffsetMs: number;
  watch: boolean;
  historyCap: number;
  paused: { reason: string; at: string } | null;
  /** ISO nominal time of the next occurrence not yet enqueued (null: the pattern has no further one). */
  next: string | null;
  /** Bumped by every upsert that changes the definition. */
  version: number;
  createdAt: string;
  updatedAt: string;
}

/**
 * A schedule removed (or, for a catalog schedule, gone from the catalog) whose history is still kept: it
 * expires REMOVED_SCHEDULE_STATE_TTL_MS (30 days) after the removal.
 */
export interface RemovedScheduleView {
  id: string;
  /** When it was removed; null when the store has no record of it (a catalog schedule that left the catalog). */
  removedAt: string | null;
  /** When Redis drops its history (and this record). */
  expiresAt: string | null;
  /** The definition it had when removed (`next` is null); null without a record. */
  definition: ScheduleView | null;
}

export interface UpsertResult {
  created: boolean;
  /** False when the same definition was upserted again (nothing was touched). */
  changed: boolean;
  next: Date | null;
}

export interface ListQuery {
  job?: string;
  /** Ids starting with this. */
  prefix?: string;
  source?: ScheduleSource;
  /** From the previous page's `cursor`; absent for the first page. */
  cursor?: string | null;
  /** Default 50, at most 500. */
  limit?: number;
}

export interface ListPage {
  items: ScheduleView[];
  /** Pass back for the next page; null on the last page. */
  cursor: string | null;
}

export interface Schedules {
  /** Creates or replaces a runtime schedule; validates everything first and stores nothing on error. */
  upsert<J extends AnyJob>(id: string, input: ScheduleInput<J>): Promise<UpsertResult>;
  /** Removes a runtime schedule and its pending occurrence; false if there was none. */
  remove(id: string): Promise<boolean>;
  get(id: string): Promise<ScheduleView | null>;
  /** A removed schedule whose history is still kept (30 days); null when it is defined or nothing of it is left. */
  getRemoved(id: string): Promise<RemovedScheduleView | null>;
  /** One page, ordered by id; never loads every schedule. */
  list(query?: ListQuery): Promise<ListPage>;
  /** How many schedules match (from Redis counters, not by loading them). */
  count(query?: Pick<ListQuery, 'job' | 'source'>): Promise<number>;
  /** Occurrences while paused are recorded as `skipped-paused`. False if already paused. */
  pause(id: string, reason: string): Promise<boolean>;
  /** False if it was not paused. Paused occurrences are not replayed unless the missed policy says so. */
  resume(id: string): Promise<boolean>;
  /** One manual run now with its own idempotency key; the next scheduled occurrence is not shifted. */
  runNow(id: string, opts?: { by?: string }): Promise<{ jobId: string; occurrence: string }>;
}
