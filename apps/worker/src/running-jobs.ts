/** What a running job is to the list: its queue and id, and how to abort it (a RunningRun, pipeline/job-run.ts). */
export interface RunningRun {
  readonly jobId: string;
  readonly job: { readonly queueName: string };
  abort(reason: unknown): void;
}

/**
 * The jobs this worker process is running, by queue and id, so a cancel request or a shutdown can abort
 * them (each RunningRun is its own AbortSource). BullMQ would do this itself, but it makes an AbortController
 * per job for a processor that takes a signal, and that controller (with its listeners) was a measurable
 * part of the worker's CPU per job though nearly no run is ever aborted. So the processor takes no signal
 * (processor.ts) and aborts go through here.
 */
export class RunningJobs {
  private readonly byQueue = new Map<string, Map<string, RunningRun>>();
  /** Set when the worker drains: a batch of occurrences starts none after this (pipeline/occurrence-batch.ts). */
  draining = false;

  add(run: RunningRun): void {
    const queue = run.job.queueName;
    let runs = this.byQueue.get(queue);
    if (!runs) this.byQueue.set(queue, (runs = new Map()));
    runs.set(run.jobId, run);
  }

  /** Forgets `run` (it ended); a later delivery of the same job that replaced it is kept. */
  delete(run: RunningRun): void {
    const runs = this.byQueue.get(run.job.queueName);
    if (runs?.get(run.jobId) === run) runs.delete(run.jobId);
  }

  /** How many jobs run now (for the process record, every few seconds: a walk of the queues, not of the jobs). */
  get size(): number {
    let n = 0;
    for (const runs of this.byQueue.values()) n += runs.size;
    return n;
  }

  /** How many jobs of `queue` run now (the consumer watchdog's free slots). */
  countOf(queue: string): number {
    return this.byQueue.get(queue)?.size ?? 0;
  }

  has(queue: string, jobId: string): boolean {
    return this.byQueue.get(queue)?.has(jobId) ?? false;
  }

  /** Aborts the job if this process runs it; true when it did (in place of BullMQ's `worker.cancelJob`). */
  cancel(queue: string, jobId: string, reason: string): boolean {
    const run = this.byQueue.get(queue)?.get(jobId);
    if (!run) return false;
    run.abort(reason);
    return true;
  }

  /** Aborts every running job (BullMQ's `worker.cancelAllJobs`). */
  cancelAll(reason: string): void {
    this.abortAll(reason);
  }

  /** Aborts every running job with `reason` (an error, such as RedisRestartedError); returns how many. */
  abortAll(reason: unknown): number {
    let n = 0;
    for (const runs of this.byQueue.values()) {
      // A copy: an abort may end its run (and delete it from the map) before the walk moves on.
      for (const run of [...runs.values()]) {
        run.abort(reason);
        n++;
      }
    }
    return n;
  }
}
