import type { AnyJob, JobContext } from '@tickwork/core';
import { JobCancelledError, JobTimeoutError, RedisRestartedError, WorkerShutdownError } from './errors.js';
import { asError } from './thrown-value.js';

export const DEFAULT_TIMEOUT_MS = 5 * 60_000;

/** What aborts a run from outside: the worker (shutdown, cancel) or a lost lease (ExactlyOnceRun.onAbort). */
export interface RunAborts {
  onAbort(listener: (reason: unknown) => void): () => void;
}

/**
 * What an attempt's end becomes, decided as it ends (the execute stage's outcome bookkeeping): called in the
 * callback that settles the attempt, so the caller needs no promise of its own to wait on the handler.
 */
export interface AttemptEnds<C> {
  /** The handler returned `value`: what the attempt resolves with (a value or a promise of one). A throw rejects it. */
  succeeded(of: C, value: unknown): unknown;
  /** The attempt failed with `err`: what it resolves with instead (a deferral, say), or a throw (usually `err`) that rejects it. */
  failed(of: C, err: Error): unknown;
}

const asEnded: AttemptEnds<unknown> = {
  succeeded: (_, value) => value,
  failed: (_, err) => {
    throw err;
  },
};

/**
 * Runs the handler under its timeout. The handler's signal is aborted on timeout or worker shutdown;
 * a handler that ignores its signal and hangs still loses the race, so the attempt fails on time and a
 * drain deadline is really a deadline (WorkerShutdownError). An operator's cancel aborts the same signal
 * with a JobCancelledError as its reason, and the attempt ends with that error.
 *
 * The handler's signal is made when the handler first reads it (most short handlers never do): an abort
 * before that is kept and applied then. One promise settles the attempt, by whichever comes first (the
 * handler, its timeout, an abort from outside): no race of promises per job. `ends`, given `of` (the
 * caller's per-job state, passed to `makeContext` too, so the caller makes no closure per job), turns the
 * handler's outcome into the attempt's as it settles; without it the attempt ends as the handler did.
 */
export function runHandler<C>(
  job: AnyJob,
  makeContext: (signalOf: () => AbortSignal, of: C) => JobContext<unknown>,
  aborts: RunAborts,
  ends: AttemptEnds<C> = asEnded as AttemptEnds<C>,
  of?: C,
): Promise<unknown> {
  return new Promise((resolve, reject) => new HandlerRun(job, aborts, ends, of as C, resolve, reject).start(makeContext));
}

/**
 * Handler timeouts: one timer per distinct timeout, not a setTimeout per attempt (its Timeout object and
 * timer-list bookkeeping were a measurable part of a no-op job's cost). Attempts with the same timeout end
 * their waits in the order they started, so each timeout keeps its attempts in a list ordered by deadline
 * (appended at the tail, unlinked when they settle) and one timer set for the head's deadline.
 */
class Deadlines {
  private head: HandlerRun | undefined;
  private tail: HandlerRun | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly ms: number) {}

  add(run: HandlerRun): void {
    run.deadline = performance.now() + this.ms;
    run.prevInLine = this.tail;
    if (this.tail) this.tail.nextInLine = run;
    else this.head = run;
    this.tail = run;
    if (!this.timer) this.arm(this.ms);
  }

  /** Unref'd: once every attempt has settled, a timer left set must not keep the process alive. */
  private arm(ms: number): void {
    this.timer = setTimeout(this.expire, ms);
    this.timer.unref();
  }

  remove(run: HandlerRun): void {
    const { prevInLine: prev, nextInLine: next } = run;
    if (prev) prev.nextInLine = next;
    else if (this.head === run) this.head = next;
    else return; // not in the list (already expired)
    if (next) next.prevInLine = prev;
    else this.tail = prev;
    run.prevInLine = run.nextInLine = undefined;
  }

  private readonly expire = (): void => {
    this.timer = undefined;
    const now = performance.now();
    while (this.head && this.head.deadline <= now) {
      const run = this.head;
      this.remove(run);
      run.timedOut();
    }
    if (this.head) this.arm(Math.max(this.head.deadline - now, 1));
  };
}

const deadlines = new Map<number, Deadlines>();

function deadlinesOf(ms: number): Deadlines {
  let d = deadlines.get(ms);
  if (!d) deadlines.set(ms, (d = new Deadlines(ms)));
  return d;
}

/** One attempt's handler, timeout and abort listener (see runHandler). */
class HandlerRun<C = unknown> {
  /** Its place in its timeout's Deadlines. */
  deadline = 0;
  prevInLine: HandlerRun | undefined;
  nextInLine: HandlerRun | undefined;
  private deadlines: Deadlines | undefined;
  private controller: AbortController | undefined;
  private aborted: { reason: unknown } | undefined;
  /** The reason the run was aborted from outside, if it was. */
  private outside: { reason: unknown } | undefined;
  private stopListening: (() => void) | undefined;
  private settled = false;

  constructor(
    private readonly job: AnyJob,
    private readonly aborts: RunAborts,
    private readonly ends: AttemptEnds<C>,
    private readonly of: C,
    private readonly resolve: (value: unknown) => void,
    private readonly reject: (err: unknown) => void,
  ) {}

  start(makeContext: (signalOf: () => AbortSignal, of: C) => JobContext<unknown>): void {
    const { job } = this;
    const timeoutMs = job.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.stopListening = this.aborts.onAbort((reason) => {
      this.outside = { reason };
      const cancelled = JobCancelledError.fromAbortReason(reason);
      this.abort(cancelled ?? reason);
      // A Redis restart ends the attempt as such (execute hands it back); any other abort is the worker leaving.
      this.fail(cancelled ?? (reason instanceof RedisRestartedError ? reason : new WorkerShutdownError(job.name)));
    });
    if (this.settled) return; // aborted before it started
    this.deadlines = deadlinesOf(timeoutMs);
    this.deadlines.add(this as unknown as HandlerRun);
    let result: Promise<unknown>;
    try {
      result = job.handler(makeContext(this.signalOf, this.of));
    } catch (err) {
      return this.fail(err);
    }
    result.then(
      (value) => {
        if (!this.settle()) return;
        try {
          this.resolve(this.ends.succeeded(this.of, value));
        } catch (err) {
          this.reject(err);
        }
      },
      (err: unknown) => this.fail(err),
    );
  }

  private readonly signalOf = (): AbortSignal => {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.aborted.reason);
    }
    return this.controller.signal;
  };

  /** Its timeout passed (Deadlines). */
  timedOut(): void {
    const err = new JobTimeoutError(this.job.name, this.job.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    this.abort(err);
    this.fail(err);
  }

  private abort(reason: unknown): void {
    this.aborted ??= { reason };
    this.controller?.abort(reason);
  }

  /**
   * Ends the attempt with `err`, unless it already ended. A handler honouring its signal may reject first
   * with an error of its own (an AbortError): the attempt still ends as cancelled.
   */
  private fail(err: unknown): void {
    if (!this.settle()) return;
    const cancelled = this.outside ? JobCancelledError.fromAbortReason(this.outside.reason) : undefined;
    try {
      this.resolve(this.ends.failed(this.of, cancelled ?? asError(err)));
    } catch (thrown) {
      this.reject(thrown);
    }
  }

  /** Marks the attempt ended (true the first time) and stops its timer and listener. */
  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    this.deadlines?.remove(this as unknown as HandlerRun);
    this.stopListening?.();
    return true;
  }
}
