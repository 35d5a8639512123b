import { RunClaimRefusedError } from './errors.js';
import { LedgerRun, type JobRecordPlace } from './ledger.js';
import { decodeValue, encodeValue } from './record-values.js';
import { claimRun, tookOver } from './claim-run.js';
import { defineScript } from '@tickwork/core';
import { completionWriter, type LedgerReply } from './ledger-batch.js';
import { duplicatesRanUnclaimed } from './metrics.js';
import type { ExactlyOnce, RunExactlyOnceOptions } from './run-types.js';
import { logOf, type RunLease } from './run-lease.js';
import { CLAIM_TX_STEP_LUA } from './ledger-lua.js';
import { runTxStepScript } from './tx-step.js';
import type { StepHost } from './steps.js';

const CLAIM_TX_STEP_SCRIPT = defineScript(CLAIM_TX_STEP_LUA);

/**
 * A run claimed at its first effect instead of before its handler starts (README, "The ledger": when a run
 * is claimed). Only for the first delivery of a job whose run is recorded in the job's own hash: nothing
 * else can hold that run then except a redelivery of the same job after it stalled, and a run that has made
 * no effect yet has nothing a duplicate could repeat.
 *
 * - `ctx.step` on a delivery that is provably the only one (`sole`: the job's hash held no run record when
 *   it was delivered, and no other delivery can have started since; apps/worker sole-delivery.ts) runs its
 *   function at once; its record, with the claim, is kept until the turn ends: the completion of a handler
 *   that returns in that turn carries both (claim and completion are one write, the step's record is not
 *   needed once the run is done); otherwise it is written then, or before the next effect if that comes
 *   first (`flush`);
 * - `ctx.step` otherwise, `ctx.lock`, `ctx.enqueue` claim first (`claimed()`, one awaited round trip), then act;
 * - `ctx.redisStep` claims in the script that commits its writes and its record (no extra round trip);
 * - a handler that made none of these completes with `complete-unclaimed`, written ahead of the job's
 *   acknowledgement like any result: the claim and the completion are one write.
 *
 * The claim answers as the up-front claim would: done elsewhere or held elsewhere throws
 * RunClaimRefusedError out of the effect (nothing happens), and the delivery ends as a suppressed duplicate
 * or is deferred; a run taken over resumes from its recorded steps.
 */
export class LazyRun implements StepHost {
  private run: LedgerRun | undefined;
  private claiming: Promise<LedgerRun> | undefined;
  /** Steps run before the claim (on a sole delivery), not yet recorded: id → encoded result. */
  private unrecorded: Map<string, string> | undefined;
  private flushing: NodeJS.Immediate | undefined;
  /** Set when the claim was refused; the delivery ends by it even if the handler caught the error. */
  refused: RunClaimRefusedError | undefined;
  /** Steps this delivery ran before its claim: nonzero when a refused claim means a step ran beside another delivery. */
  stepsBeforeClaim = 0;

  constructor(
    private readonly eo: ExactlyOnce,
    /** The run's options: its key, and whether no other delivery can hold or have completed it (`deliveryIsSole`). */
    private readonly opts: RunExactlyOnceOptions,
    /** Where the run's record lives: its job's hash (and its queue, the record's hash tag on a cluster). */
    private readonly place: JobRecordPlace,
    readonly owner: string,
    /** Keeps the run's lease once it is this delivery's. */
    private readonly lease: RunLease,
  ) {}

  get idempotencyKey(): string {
    return this.opts.key;
  }

  /** The key of the job whose hash holds the run's record. */
  get jobKey(): string {
    return this.place.jobKey;
  }

  /** The claimed run, if the handler made an effect. */
  get claimedRun(): LedgerRun | undefined {
    return this.run;
  }

  /** True while a claim is in flight (a step the handler did not await): `settled` has something to wait for. */
  get claimInFlight(): boolean {
    return this.claiming !== undefined && !this.run;
  }

  /** Waits for a claim still in flight (a step the handler did not await), whatever its outcome. */
  async settled(): Promise<void> {
    if (this.claiming && !this.run) await this.claiming.catch(() => undefined);
  }

  recordedStep(id: string): { value: unknown } | undefined {
    if (this.run) return this.run.recordedStep(id);
    const raw = this.unrecorded?.get(id);
    return raw === undefined ? undefined : { value: decodeValue(raw) };
  }

  /**
   * Before a `ctx.step` runs its function: nothing to wait for on a sole delivery with nothing unrecorded,
   * else the claim (which writes the record of a step run before it: a step's record is in Redis before the
   * next step starts, as with a claim up front).
   */
  beforeEffect(): Promise<unknown> | undefined {
    if (this.run) return undefined;
    if (!this.claiming && !this.unrecorded && this.opts.deliveryIsSole?.() === true) {
      this.stepsBeforeClaim++;
      return undefined;
    }
    return this.claimed();
  }

  /** The claim: written with the steps run before it when there are any (flush), else on its own. */
  claimed(): Promise<LedgerRun> {
    return (this.claiming ??= this.unrecorded ? this.flush() : this.claim());
  }

  async recordStep(id: string, value: unknown): Promise<boolean> {
    if (this.run || this.claiming) return (await this.claimed()).recordStep(id, value);
    // A step run before the claim: its record waits for the end of the turn, for the completion to carry it.
    (this.unrecorded ??= new Map()).set(id, encodeValue(value));
    this.flushing ??= setImmediate(() => {
      this.flushing = undefined;
      if (this.unrecorded && !this.claiming) this.claimed().catch(() => undefined); // a refusal is kept in `refused`
    });
    return true;
  }

  /**
   * The completion takes the steps not yet recorded: a completion claims the run with the result, and a run
   * done needs no record of its steps (a later delivery gets the result). Returns how many there were.
   */
  takeUnrecorded(): number {
    const n = this.unrecorded?.size ?? 0;
    this.unrecorded = undefined;
    if (this.flushing) clearImmediate(this.flushing);
    this.flushing = undefined;
    return n;
  }

  /** Records the steps run before the claim, if the turn's end has not: a failed attempt gives back a run that keeps them. */
  async recordUnrecorded(): Promise<void> {
    if (this.unrecorded && !this.claiming) await this.claimed().catch(() => undefined);
    await this.settled();
  }

  async recordTxStep(id: string, value: unknown, commands: readonly (string | number)[][]): Promise<boolean> {
    if (this.claiming || this.unrecorded) return this.txStepOnClaimed(await this.claimed(), id, value, commands);
    let committed = false;
    this.claiming = this.claimWithTxStep(id, encodeValue(value), commands).then((run) => {
      if (!run) return this.claim();
      committed = true;
      return run;
    });
    const run = await this.claiming;
    return committed || this.txStepOnClaimed(run, id, value, commands);
  }

  /** A claim that may have resumed recorded steps: a step recorded by another delivery is not applied again. */
  private txStepOnClaimed(run: LedgerRun, id: string, value: unknown, commands: readonly (string | number)[][]): Promise<boolean> {
    if (run.recordedStep(id)) return Promise.resolve(true);
    return run.recordTxStep(id, value, commands);
  }

  private async claim(): Promise<LedgerRun> {
    const outcome = await claimRun(this.eo, this.opts, this.owner);
    if (outcome.kind !== 'claimed') throw (this.refused = new RunClaimRefusedError(this.idempotencyKey, outcome));
    this.run = outcome.run;
    if (outcome.tookOver) tookOver(this.opts, outcome);
    this.lease.keep(outcome.run);
    return outcome.run;
  }

  /**
   * Claims the run with the steps run before the claim: the first in the claim's own script, any others
   * (steps run side by side) after it. A run that is not new (the sole-delivery judgement was wrong: a
   * clock jumped) is claimed as usual, and its steps recorded if the claim succeeds.
   */
  private async flush(): Promise<LedgerRun> {
    const steps = [...(this.unrecorded ?? [])];
    this.takeUnrecorded();
    const [first] = steps;
    const run = (first && (await this.claimWithTxStep(first[0], first[1], []))) || (await this.claim());
    for (const [id, encoded] of steps) {
      if (run.recordedStep(id)) continue; // the first (in the claim), or recorded by a delivery this one took over from
      if (!(await run.recordStep(id, decodeValue(encoded)))) break; // the lease is lost: the run's own checks say so
    }
    return run;
  }

  /** The fold: claims a new run and commits the step in one script; undefined when the run is not new. */
  private async claimWithTxStep(id: string, encoded: string, commands: readonly (string | number)[][]): Promise<LedgerRun | undefined> {
    const { ledger } = this.eo;
    const at = ledger.locate(this.idempotencyKey, this.place);
    const words = [this.owner, ledger.leaseMs, id, encoded, ledger.unfinishedTtlMs];
    if ((await runTxStepScript(ledger.redis, CLAIM_TX_STEP_SCRIPT, at.record, at.steps, words, commands)) !== 1) return undefined;
    const run = new LedgerRun(ledger, this.idempotencyKey, at, this.owner, new Map<string, string>().set(id, encoded));
    this.run = run;
    this.lease.keep(run);
    return run;
  }
}

/**
 * Records the result of a lazily claimed run that made no effect: claim and completion in one write, ahead
 * of the acknowledgement like any result. If another delivery of the job holds or completed the run (the
 * job stalled and was redelivered while this one ran), this delivery's handler ran beside it: that is the
 * documented cost of the lazy claim for a handler without steps, counted and logged, and nothing is written.
 * Returns `result`, or a promise of it when there is a write to wait for; it never rejects (a failed write is
 * logged by `outcome`).
 */
export function recordUnclaimed(eo: ExactlyOnce, opts: RunExactlyOnceOptions, lazy: LazyRun, result: unknown): unknown {
  const args = ['j', lazy.owner, encodeValue(result)];
  // Taken once the result is encoded: a result that cannot be leaves them to be recorded as the run is given back.
  const stepsRun = lazy.takeUnrecorded();
  const jobKey = lazy.jobKey;
  const outcome = (reply: LedgerReply | Error) => {
    if (reply instanceof Error) {
      logOf(opts).error({ idempotencyKey: opts.key, err: { message: reply.message } }, 'could not record the result; a redelivery may run it again');
    } else if (reply !== 1) {
      duplicatesRanUnclaimed.inc(opts.labels);
      const otherDelivery = reply === 2 ? 'completed' : 'running';
      if (stepsRun === 0) logOf(opts).warn({ idempotencyKey: opts.key, otherDelivery }, 'a handler without steps ran beside another delivery of the same job; its result is not recorded');
      // Only if the sole-delivery judgement was wrong (LazyRun.beforeEffect): its steps may have run twice.
      else logOf(opts).error({ idempotencyKey: opts.key, otherDelivery, stepsRun }, 'a handler ran steps beside another delivery of the same job; its result is not recorded');
    }
  };
  if (opts.ackConnection) {
    // The result itself when the record rides in the acknowledgement: no promise to wait on (the common case).
    // A sole delivery's record rides without a check (ack-ride.ts).
    const written = completionWriter(opts.ackConnection).complete(jobKey, args, outcome, 'completeUnclaimed', jobKey, opts.deliveryIsSole?.() === true);
    return written ? written.then(() => result) : result;
  }
  return eo.ledger.batcher.call('completeUnclaimed', jobKey, args).then(outcome, outcome).then(() => result);
}
