import type { Job } from 'bullmq';

export interface SoleDeliveryOptions {
  /** Condition 1: the engine's note of a job whose hash held no run record when delivered (Engine.unrecordedAtDelivery). */
  unrecordedAtDelivery: (job: Job) => boolean;
  /** BullMQ's lock duration for the Worker (its `lockDuration`). */
  lockDurationMs: number;
  /** Conditions 3 and 4 (recovery.ts); without recovery (no reaper, no lost-delivery check) they hold. */
  recovery?: { certain(queue: string, deliveredAt: number): boolean } | undefined;
}

/**
 * Whether a job's delivery is provably the only one: the question a lazily claimed run's `ctx.step` asks
 * before it runs its function without claiming the run first (runtime lazy-run.ts; README, "When a run is
 * claimed"). Yes only when all of these hold:
 *
 * 1. the job's hash held no run record when BullMQ delivered it (the engine's TickworkWorker notes it
 *    from the hash the delivering script returns): no delivery had claimed the run, and this is not an operator's retry
 *    (counters reset) of a run already made;
 * 2. the delivery's BullMQ lock is within the first half of its first term: BullMQ sets it for
 *    `lockDuration` when the job moves to active, at a moment no earlier than `processedOn` (the worker's
 *    clock when it sent that command), so the stalled check cannot have taken the job back;
 * 3. every other worker has counted this process alive all along since the delivery (its beats came without
 *    a gap as long as the dead-after time less a beat, counted from when each was sent, the last one too),
 *    so no reaper can have taken the job back, not even while this process was frozen;
 * 4. the Worker's connection has had no trouble lately (the lost-delivery check is not armed), so this
 *    process has not taken the job back itself after a reply it thought lost.
 *
 * A delivery passing all four could not meet another delivery of its job, so a claim would have been
 * granted: the claim can ride with the step's record instead of costing a round trip before the step. What
 * remains is the gap every claim has (a process frozen between its check and its effect), and Redis losing
 * acknowledged writes (a failover before replication), which the README's Failover section states.
 *
 * This is the check ProcessorDeps.soleDelivery asks.
 */
export function soleDeliveryCheck(opts: SoleDeliveryOptions): (job: Job) => boolean {
  const firstHalf = opts.lockDurationMs / 2;
  return (job) =>
    opts.unrecordedAtDelivery(job) &&
    job.processedOn !== undefined &&
    Date.now() - job.processedOn < firstHalf &&
    (opts.recovery?.certain(job.queueName, job.processedOn) ?? true);
}
