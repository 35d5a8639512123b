import { LeaseLostError } from './errors.js';
import type { LedgerRun } from './ledger.js';
import { LeaseKeeper } from './lease-keeper.js';
import { leasesLost } from './metrics.js';
import type { ExactlyOnce, RunExactlyOnceOptions } from './run-exactly-once.js';

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
export function logOf(opts: RunExactlyOnceOptions) {
  return typeof opts.log === 'function' ? opts.log() : opts.log;
}

/**
 * Keeps a run's ledger lease (and its overlap slot) renewed while the body runs, from the time the run is
 * claimed (`keep`): before the body starts, or at its first effect for a lazily claimed run. The run's
 * signal aborts when the worker aborts the delivery, or when renewal is refused or keeps failing until the
 * lease must have expired: someone else may own the run then. The signal is made on first use (most no-op
 * and short handlers never look at it), linked to the worker's signal by a listener (AbortSignal.any costs
 * far more per call and in GC).
 */
export class RunLease {
  private controller: AbortController | undefined;
  private lostWith: LeaseLostError | undefined;
  private unkeep: (() => void) | undefined;
  private abortListener: ((reason: unknown) => void) | undefined;
  private stopped = false;

  constructor(
    private readonly eo: ExactlyOnce,
    private readonly opts: RunExactlyOnceOptions,
  ) {}

  private readonly onWorkerAbort = () => this.controller?.abort(this.opts.signal?.reason);

  keep(run: LedgerRun): void {
    const { eo, opts } = this;
    if (this.stopped) return; // a claim that landed after the run ended (a step the handler did not await)
    let keeper = keepers.get(eo.ledger);
    if (!keeper) keepers.set(eo.ledger, (keeper = new LeaseKeeper(eo.ledger.leaseMs)));
    const overlap = opts.overlap;
    this.unkeep = keeper.keep({
      renew: async () => {
        const ok = await run.renew();
        if (overlap) await eo.overlap.renew(overlap.schedule, opts.key);
        return ok;
      },
      lose: (detail) => {
        if (this.lostWith) return;
        this.lostWith = lostLease(opts, detail);
        this.controller?.abort(this.lostWith);
        this.abortListener?.(this.lostWith);
      },
    });
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      const workerSignal = this.opts.signal;
      this.controller = new AbortController();
      if (this.lostWith) this.controller.abort(this.lostWith);
      else if (workerSignal?.aborted) this.controller.abort(workerSignal.reason);
      else workerSignal?.addEventListener('abort', this.onWorkerAbort, { once: true });
    }
    return this.controller.signal;
  }

  /**
   * Calls `listener` once when the run is aborted (the worker aborts the delivery, or the lease is lost),
   * without making the run's signal; one listener at a time. Returns the function that stops listening.
   */
  onAbort(listener: (reason: unknown) => void): () => void {
    const workerSignal = this.opts.signal;
    if (this.lostWith) return listener(this.lostWith), noop;
    if (workerSignal?.aborted) return listener(workerSignal.reason), noop;
    this.abortListener = listener;
    const onWorker = () => listener(workerSignal?.reason);
    workerSignal?.addEventListener('abort', onWorker, { once: true });
    return () => {
      this.abortListener = undefined;
      workerSignal?.removeEventListener('abort', onWorker);
    };
  }

  get lost(): LeaseLostError | undefined {
    return this.lostWith;
  }

  stop(): void {
    this.stopped = true;
    this.unkeep?.();
    this.unkeep = undefined;
    if (this.controller) this.opts.signal?.removeEventListener('abort', this.onWorkerAbort);
  }
}
