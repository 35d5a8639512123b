import type { ClaimOutcome } from './ledger.js';
import { newOwner } from './record-values.js';
import { leaseTakeovers } from './metrics.js';
import type { ExactlyOnce, RunExactlyOnceOptions } from './run-types.js';
import { logOf } from './run-lease.js';

/**
 * Claims the run. Only when another delivery holds a live lease (rare: a duplicate, or a redelivery after
 * a crash) is the worker registry asked whether the holder's process is dead; if so the lease is taken
 * over at once, compare-and-set on that holder, instead of waiting for it to expire. The registry is a
 * different key than the run's record, so it is read here, not in the claim's script (Redis Cluster).
 */
export async function claimRun(
  eo: ExactlyOnce,
  opts: RunExactlyOnceOptions,
  owner: string = newOwner(eo.liveness?.tag),
): Promise<ClaimOutcome | (ClaimOutcome & { holderDead: true })> {
  const claim = await eo.ledger.claim(opts.key, opts.place, owner, undefined, opts.claimVia);
  if (claim.kind !== 'busy' || !eo.liveness) return claim;
  // A failed check changes nothing: the delivery is deferred as if the holder were alive. A holder not dead
  // yet says when it would be (the registry's hold after an outage, or a silence just begun): the delivery
  // comes back then rather than when the lease would run out.
  const deadInMs = await eo.liveness.deadInMs(claim.holder).catch(() => undefined);
  if (deadInMs === undefined) return claim;
  if (deadInMs > 0) return { ...claim, holderDeadInMs: deadInMs };
  const again = await eo.ledger.claim(opts.key, opts.place, owner, claim.holder);
  return again.kind === 'claimed' ? { ...again, holderDead: true } : again;
}

/** A claim that took the run over from a holder that stopped renewing its lease: counted and logged. */
export function tookOver(opts: RunExactlyOnceOptions, claim: ClaimOutcome & { kind: 'claimed' }): void {
  leaseTakeovers.inc(opts.labels);
  const holderDead = 'holderDead' in claim;
  logOf(opts).warn({ idempotencyKey: opts.key, recordedSteps: claim.run.recordedStepCount, holderDead }, 'took over a run whose holder stopped renewing its lease');
}
