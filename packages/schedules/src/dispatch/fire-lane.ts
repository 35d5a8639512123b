import type { Logger } from '@tickwork/core';
import type { Claimed, DispatchResult } from './types.js';


/** A run due within this of now is added at once: a timer that short would only add jitter. */
export const FIRE_NOW_MS = 2;

/**
 * The longest head start an occurrence may have (the scheduler's SCHEDULE_HEAD_START_MS), and the longest
 * a worker holds an early occurrence before running it (its clock may be behind the scheduler's).
 */
export const MAX_HEAD_START_MS = 1000;

/** The scheduler's default head start: longer than the worker's usual stalls (GC, a busy core), short beside a slot's time. */
export const DEFAULT_HEAD_START_MS = 50;

/**
 * The scheduled lane: occurrences are added to their queue at their exact time, at the head of the wait
 * list (BullMQ's `lifo`), instead of ahead of time through BullMQ's delayed set. A delayed job, once due,
 * goes to the back of the wait list, so an occurrence behind a backlog of 20,000 jobs would start only
 * when they are done; added at the head, it is the next job a worker takes.
 *
 * Each is added its head start (`headStartMs`) before its time, so that it is fetched and handed to the
 * handler's stages before it is due: the worker holds it until its time before claiming it (the worker's
 * onTime stage), so nothing of the run happens early, and its start no longer waits for the add, the fetch
 * and the delivery, nor for a stall of the worker process within the head start.
 *
 * The dispatcher claims occurrences up to the look-ahead; those to add later than FIRE_NOW_MS are held here
 * (one timer per distinct time) and their claims committed only after their runs are added, so a
 * scheduler that dies while holding them leaves its lease to expire and another replica adds them (a
 * little late, still within the grace period). The look-ahead must stay well below the claim lease.
 */
export function createFireLane(opts: {
  /**
   * Adds a group's runs with the head start it was held for, then commits its claims. `lateMs`: how much
   * later than planned it fires (a process frozen or starved meanwhile may have had its claims taken over).
   */
  fire: (group: readonly Claimed[], token: string, headStartMs: number, lateMs: number) => Promise<number>;
  log: Logger;
  /** Whether `fire` resolves only once the held groups are added (tests) or at once (the scheduler's loop). */
  waitHeld: boolean;
  /**
   * Runs due later than this are added at once, delayed by BullMQ, rather than held: a claim must not be
   * held near its lease (a look-ahead longer than half the lease, as some tests use to plan a day ahead).
   */
  maxHoldMs: number;
}) {
  const pending = new Set<Promise<void>>();

  /** `due`: the wall-clock time to add the group at (lateness is measured from it, a freeze before the hold included). */
  function hold(at: number, due: number, group: Claimed[], token: string, headStartMs: number, result: DispatchResult): Promise<void> {
    const done = new Promise<void>((resolve) => {
      setTimeout(() => {
        opts
          .fire(group, token, headStartMs, Date.now() - due)
          .then((n) => {
            result.committed += n;
          })
          .catch((err: unknown) =>
            // The claims stay leased: when the lease expires another tick (or replica) claims them again.
            opts.log.error({ err: { message: (err as Error).message }, at: new Date(at).toISOString() }, 'could not add held occurrences; they are re-claimed when the lease expires'),
          )
          .finally(resolve);
      }, Math.max(0, due - Date.now()));
    });
    pending.add(done);
    void done.then(() => pending.delete(done));
    return done;
  }

  return {
    /**
     * Adds and commits what is due now, holds the rest until its time. `now` is the tick's clock (the one
     * the plan was made with) and `startedAt` the wall clock when the tick began: the hold is measured from
     * `now`, less all the tick has taken since (its claim round trips too, which once made every held run
     * a few ms late). `headStartMs`: how long before its time an on-time occurrence is added (at most
     * MAX_HEAD_START_MS); a held group is added with the head start it was held for.
     */
    async fire(claimed: readonly Claimed[], now: number, startedAt: number, token: string, result: DispatchResult, headStartMs: number): Promise<void> {
      const ready: Claimed[] = [];
      const held = new Map<number, Claimed[]>();
      for (const c of claimed) {
        const at = c.runs.reduce((latest, r) => (r.catchUp ? latest : Math.max(latest, r.nominal - headStartMs)), now);
        if (at - now <= FIRE_NOW_MS || at - now > opts.maxHoldMs) ready.push(c);
        else {
          let group = held.get(at);
          if (!group) held.set(at, (group = []));
          group.push(c);
        }
      }
      // Due now: planned at the tick's start, so late by whatever the claim round took beyond that.
      // Read `result` only once the fire returns: another round's fire may add to it meanwhile.
      if (ready.length > 0) {
        const committed = await opts.fire(ready, token, headStartMs, Date.now() - startedAt);
        result.committed += committed;
      }
      const waits: Promise<void>[] = [];
      for (const [at, group] of held) {
        waits.push(hold(at, startedAt + (at - now), group, token, headStartMs, result));
      }
      if (opts.waitHeld) await Promise.all(waits);
    },
    /** Resolves once every held group has been added and committed. */
    async idle(): Promise<void> {
      while (pending.size > 0) await Promise.all([...pending]);
    },
  };
}
