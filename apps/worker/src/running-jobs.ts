/** What a running job is to the list: its queue and id, and how to abort it (a RunningRun, pipeline/job-run.ts). */
export interface RunningRun {
  readonly jobId: string;
  readonly job: { readonly queueName: string };
  /** A batch of occurrences (pipeline/occurrence-batch.ts): its occurrences run as runs of their own. */
  readonly carrier?: boolean;
  /** An occurrence run in its batch: it holds no slot of BullMQ's (its batch does). */
  readonly carried?: boolean;
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
  /** Batches of occurrences running, by queue (runsOf leaves them out). */
  private readonly carriers = new Map<string, number>();
  /** Occurrences running in their batches, by queue (jobsOf leaves them out). */
  private readonly carried = new Map<string, number>();
  /** Set when the worker drains: a batch of occurrences starts none after this (pipeline/occurrence-batch.ts). */
  draining = false;

  add(run: RunningRun): void {
    const queue = run.job.queueName;
    let runs = this.byQueue.get(queue);
    if (!runs) this.byQueue.set(queue, (runs = new Map()));
    runs.set(run.jobId, run);
    if (run.carrier) this.carriers.set(queue, (this.carriers.get(queue) ?? 0) + 1);
    else if (run.carried) this.carried.set(queue, (this.carried.get(queue) ?? 0) + 1);
  }

  /** Forgets `run` (it ended); a later delivery of the same job that replaced it is kept. */
  delete(run: RunningRun): void {
    const runs = this.byQueue.get(run.job.queueName);
    if (runs?.get(run.jobId) !== run) return;
    runs.delete(run.jobId);
    if (run.carrier) this.carriers.set(run.job.queueName, (this.carriers.get(run.job.queueName) ?? 1) - 1);
    else if (run.carried) this.carried.set(run.job.queueName, (this.carried.get(run.job.queueName) ?? 1) - 1);
  }

  /** How many of BullMQ's jobs of `queue` (its Worker's slots: jobs, and batches) this process runs now. */
  jobsOf(queue: string): number {
    return this.countOf(queue) - (this.carried.get(queue) ?? 0);
  }

  /** How many runs of `queue` (jobs, and occurrences of batches; not the batches themselves) this process runs now. */
  runsOf(queue: string): number {
    return this.countOf(queue) - (this.carriers.get(queue) ?? 0);
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
