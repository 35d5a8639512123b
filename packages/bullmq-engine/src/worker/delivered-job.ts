import { Job, type JobProgress } from 'bullmq';

/**
 * A job delivered by a TickworkWorker, saying whether its hash held no run record then. A field of the job
 * rather than a WeakSet of jobs: a WeakSet entry per delivery cost an insertion and GC work (its table is
 * walked at every collection) for each job; one class keeps every delivered job one shape.
 */
export class DeliveredJob<D = unknown, R = unknown, N extends string = string, P extends JobProgress = JobProgress> extends Job<D, R, N, P> {
  unrecordedAtDelivery = false;
}
