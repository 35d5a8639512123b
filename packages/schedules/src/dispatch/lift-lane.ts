import type { Logger } from '@tickwork/core';

/**
 * What adding ahead needs of BullMQ (the engine's LiftAhead, bound to the app's queues): `note` records jobs
 * added as delayed jobs to move at their time, `lift` moves a queue's noted jobs due by `now` to the head of
 * its wait list.
 */
export interface AheadLift {
  note(queue: string, jobs: readonly { id: string; at: number }[]): Promise<void>;
  lift(queue: string, now?: number): Promise<number>;
}

/**
 * How much later than its lift a job added ahead is due to BullMQ: when no lift comes (every scheduler
 * stopped), BullMQ promotes it this late, to the back of the wait list.
 */
export const LIFT_SLACK_MS = 1000;

/** How often every scheduler lifts every queue's due jobs: what another replica noted before it stopped or died. */
export const LIFT_SWEEP_MS = 1000;

/**
 * The add-ahead lane. An occurrence due later than the look-ahead is added at once, as a delayed job, and
 * its claim committed; it is noted in its queue's ahead set (engine: delayed/lift-ahead.ts) and lifted to
 * the head of the wait list at its head start before its time, as an occurrence added at its time would be
 * placed. The replica that adds it sets a timer per queue and time; every replica also lifts every queue
 * each LIFT_SWEEP_MS, so a replica stopped or killed meanwhile costs its jobs at most that much.
 */
export function createLiftLane(opts: { lift: AheadLift; queues: () => readonly string[]; log: Logger; sweepMs?: number }) {
  const timers = new Map<string, NodeJS.Timeout>();
  /**
   * Queues whose lift is in flight, with the latest time another lift was asked for meanwhile (0: none): one
   * call at a time per queue, so a master that does not answer (frozen) does not pile up a call a second.
   */
  const lifting = new Map<string, number>();
  let failing = false;

  /** Lifts the queue's jobs due by `upTo` (or by now, if later). */
  async function liftQueue(queue: string, upTo: number): Promise<void> {
    const inFlight = lifting.get(queue);
    if (inFlight !== undefined) {
      lifting.set(queue, Math.max(inFlight, upTo));
      return;
    }
    try {
      for (let next = upTo; next > 0; next = lifting.get(queue) ?? 0) {
        lifting.set(queue, 0);
        // A timer may fire a millisecond early: the jobs it is for are due by its time, not by the clock's.
        await opts.lift.lift(queue, Math.max(Date.now(), next));
      }
      failing = false;
    } catch (err) {
      // The jobs stay noted: the next sweep lifts them, and BullMQ promotes them LIFT_SLACK_MS after their time.
      if (!failing) opts.log.warn({ err: { message: (err as Error).message }, queue }, 'could not lift occurrences added ahead; retrying every second');
      failing = true;
    } finally {
      lifting.delete(queue);
    }
  }

  const sweeper = setInterval(() => {
    for (const queue of opts.queues()) void liftQueue(queue, Date.now());
  }, opts.sweepMs ?? LIFT_SWEEP_MS);
  sweeper.unref();

  return {
    /** Notes jobs added ahead (by queue) and sets a timer per queue and time to lift them then. */
    async note(byQueue: ReadonlyMap<string, readonly { id: string; at: number }[]>): Promise<void> {
      await Promise.all(
        [...byQueue].map(async ([queue, jobs]) => {
          await opts.lift.note(queue, jobs);
          for (const at of new Set(jobs.map((j) => j.at))) {
            const key = `${queue}\n${at}`;
            if (timers.has(key)) continue;
            const timer = setTimeout(() => {
              timers.delete(key);
              void liftQueue(queue, at);
            }, Math.max(0, at - Date.now()));
            timer.unref();
            timers.set(key, timer);
          }
        }),
      );
    },
    /** Stops lifting: what is noted is lifted by another replica's sweep, or promoted by BullMQ. */
    stop(): void {
      clearInterval(sweeper);
      for (const t of timers.values()) clearTimeout(t);
      timers.clear();
    },
  };
}
