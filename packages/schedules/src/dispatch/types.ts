import type { StoredDef } from '../store/definition.js';

/*
 * The shapes the dispatcher (dispatcher.ts), its fire lane (fire-lane.ts) and the adding of occurrence jobs
 * (occurrence-jobs.ts) hand each other, in a file of their own so none of the three imports another for them.
 */

/** What one dispatch did, counted. */
export interface DispatchResult {
  claimed: number;
  /** Of those, claims taken over from a replica that died holding them (lease expired or released). */
  takenOver: number;
  enqueued: number;
  caughtUp: number;
  missed: number;
  skippedPaused: number;
  committed: number;
  rounds: number;
}

/** What COMMIT writes for one claimed schedule: its next occurrence and the history records. */
export interface Commit {
  id: string;
  next: number | null;
  watchDeadline: number | null;
  cap: number;
  records: { id: string; score: number; patch: Record<string, unknown>; defaults: Record<string, unknown> }[];
  /** A claim ahead that puts its own nominal back (too frequent to add ahead): COMMIT notes it in `notAhead`. */
  notAhead?: true;
}

/** One run to add: a schedule's occurrence (on time or catch-up) or a manual run. */
export interface OccurrenceJob {
  id: string;
  def: StoredDef;
  nominal: number;
  catchUp: boolean;
  /** The rule's interval near this occurrence (for the default slowAfter of watched schedules). */
  intervalMs: number | null;
  /** Set for runNow: the token naming the manual run; its job id and key. */
  manual?: { token: string; jobId: string };
}

/** One claimed schedule: its shard, what COMMIT will write, and the runs to add first. */
export interface Claimed {
  shard: number;
  commit: Commit;
  runs: OccurrenceJob[];
}
