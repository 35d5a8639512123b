/**
 * Renews the leases of the runs in flight from one shared timer instead of a timer per run: at
 * concurrency 50 a per-run setTimeout/clearTimeout pair (and its closures) was a measurable part of the
 * ledger's cost per job, while nearly every run ends long before its first renewal is due.
 *
 * The timer ticks every sixth of the lease while any run is kept; a run is renewed once a third of the
 * lease has passed since its last renewal (so at the latest after half the lease), one renewal in flight
 * per run at a time, as with a timer per run.
 */
export abstract class KeptLease {
  /** The keeper's bookkeeping, kept on the lease itself: keeping a run's lease allocates nothing. */
  renewedAt = 0;
  renewing = false;
  /** Renews the lease; false when it was refused (the run was taken over). */
  abstract renew(): Promise<boolean>;
  /** Called once when the lease is lost: refused, or failing until it must have expired. */
  abstract lose(detail: string): void;
}

export class LeaseKeeper {
  private readonly entries = new Set<KeptLease>();
  private timer: NodeJS.Timeout | undefined;
  private readonly tickMs: number;
  private readonly renewAfterMs: number;

  constructor(private readonly leaseMs: number) {
    this.renewAfterMs = Math.max(Math.floor(leaseMs / 3), 10);
    this.tickMs = Math.max(Math.floor(leaseMs / 6), 5);
  }

  /** Starts keeping `lease` (claimed just now); `release` it when the run ends. */
  keep(lease: KeptLease): void {
    lease.renewedAt = Date.now();
    lease.renewing = false;
    this.entries.add(lease);
    if (!this.timer) {
      this.timer = setInterval(() => this.sweep(), this.tickMs);
      this.timer.unref();
    }
  }

  /** Stops keeping `lease` (its run ended). */
  release(lease: KeptLease): void {
    this.entries.delete(lease);
  }

  private sweep(): void {
    if (this.entries.size === 0) {
      // Stopped lazily here rather than when the last run ends, so a busy worker does not start and
      // stop the timer between jobs.
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    const now = Date.now();
    for (const lease of this.entries) {
      if (!lease.renewing && now - lease.renewedAt >= this.renewAfterMs) void this.renew(lease);
    }
  }

  private async renew(lease: KeptLease): Promise<void> {
    lease.renewing = true;
    try {
      const ok = await lease.renew();
      if (!ok) {
        this.entries.delete(lease);
        return lease.lose('renewal refused: the lease had expired and was taken over');
      }
      lease.renewedAt = Date.now();
    } catch (err) {
      if (Date.now() - lease.renewedAt >= this.leaseMs) {
        this.entries.delete(lease);
        return lease.lose(`renewal failing: ${(err as Error).message}`);
      }
    } finally {
      lease.renewing = false;
    }
  }
}
