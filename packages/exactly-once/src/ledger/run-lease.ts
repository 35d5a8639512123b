import type { Logger } from '@tickwork/core';
import { LeaseLostError } from './errors.js';
import type { LedgerRun } from './ledger.js';
import { KeptLease, LeaseKeeper } from './lease-keeper.js';
import { leasesLost } from './metrics.js';
import type { AbortSource, ExactlyOnce, RunExactlyOnceOptions } from './run-types.js';

const noop = () => {};

/** One renewal timer per ledger, shared by its runs (see LeaseKeeper). */
const keepers = new WeakMap<ExactlyOnce['ledger'], LeaseKeeper>();

export function lostLease(opts: RunExactlyOnceOptions, detail: string): LeaseLostError {
  leasesLost.inc(opts.labels);
  const err = new LeaseLostError(opts.key, detail);
  logOf(opts).error({ idempotencyKey: opts.key }, err.message);
  return err;
}

/** The run's logger: given, or made on first use (a child logger per job costs CPU most runs never need). */
export function logOf(opts: RunExactlyOnceOptions): Logger {
  return typeof opts.log === 'function' ? opts.log() : opts.log;
}


/** An AbortSignal as an AbortSource (callers that have a signal, such as tests). */
function sourceOf(signal: AbortSignal | AbortSource | undefined): AbortSource | undefined {
  if (!signal || typeof (signal as Partial<AbortSource>).onAbort === 'function') return signal as AbortSource | undefined;
  const s = signal as AbortSignal;
  return {
    get aborted() {
      return s.aborted;
    },
    get reason() {
      return s.reason as unknown;
    },
    onAbort(listener) {
      const onAbort = () => listener(s.reason);
      s.addEventListener('abort', onAbort, { once: true });
      return () => s.removeEventListener('abort', onAbort);
    },
  };
}

/**
 * Keeps a run's ledger lease (and its overlap slot) renewed while the body runs, from the time the run is
 * claimed (`keep`): before the body starts, or at its first effect for a lazily claimed run. The run's
 * signal aborts when the worker aborts the delivery, or when renewal is refused or keeps failing until the
 * lease must have expired: someone else may own the run then. The signal is made on first use (most no-op
 * and short handlers never look at it), linked to the worker's abort source by a listener (AbortSignal.any
 * costs far more per call and in GC).
 */
export class RunLease extends KeptLease {
  private controller: AbortController | undefined;
  private lostWith: LeaseLostError | undefined;
  /** The claimed run, and the keeper renewing its lease, from `keep` until `stop`. */
  private run: LedgerRun | undefined;
  private keeper: LeaseKeeper | undefined;
  private abortListener: ((reason: unknown) => void) | undefined;
  private unlistenWorker: (() => void) | undefined;
  private stopped = false;
  private readonly worker: AbortSource | undefined;

  constructor(
    private readonly eo: ExactlyOnce,
    private readonly opts: RunExactlyOnceOptions,
  ) {
    super();
    this.worker = sourceOf(opts.signal);
  }

  keep(run: LedgerRun): void {
    const { eo } = this;
    if (this.stopped) return; // a claim that landed after the run ended (a step the handler did not await)
    let keeper = keepers.get(eo.ledger);
    if (!keeper) keepers.set(eo.ledger, (keeper = new LeaseKeeper(eo.ledger.leaseMs)));
    this.run = run;
    this.keeper = keeper;
    keeper.keep(this);
  }

  /** KeptLease: the run's lease, and its overlap slot when it has one. */
  async renew(): Promise<boolean> {
    const { eo, opts, run } = this;
    if (!run) return true;
    const ok = await run.renew();
    if (opts.overlap) await eo.overlap.renew(opts.overlap.schedule, opts.key);
    return ok;
  }

  /** KeptLease: the lease is lost; the run is aborted. */
  lose(detail: string): void {
    if (this.lostWith) return;
    this.lostWith = lostLease(this.opts, detail);
    this.controller?.abort(this.lostWith);
    this.abortListener?.(this.lostWith);
  }

  /** True once the run is aborted (the worker's abort or a lost lease), without making the signal. */
  get aborted(): boolean {
    return this.lostWith !== undefined || this.worker?.aborted === true || this.controller?.signal.aborted === true;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      const worker = this.worker;
      const controller = (this.controller = new AbortController());
      if (this.lostWith) controller.abort(this.lostWith);
      else if (worker?.aborted) controller.abort(worker.reason);
      else if (worker && !this.stopped) this.unlistenWorker = worker.onAbort((reason) => controller.abort(reason));
    }
    return this.controller.signal;
  }

  /**
   * Calls `listener` once when the run is aborted (the worker aborts the delivery, or the lease is lost),
   * without making the run's signal; one listener at a time. Returns the function that stops listening.
   */
  onAbort(listener: (reason: unknown) => void): () => void {
    const worker = this.worker;
    if (this.lostWith) return listener(this.lostWith), noop;
    if (worker?.aborted) return listener(worker.reason), noop;
    this.abortListener = listener;
    const unlisten = worker?.onAbort(listener);
    return () => {
      this.abortListener = undefined;
      unlisten?.();
    };
  }

  get lost(): LeaseLostError | undefined {
    return this.lostWith;
  }

  stop(): void {
    this.stopped = true;
    this.keeper?.release(this);
    this.keeper = undefined;
    this.unlistenWorker?.();
    this.unlistenWorker = undefined;
  }
}
