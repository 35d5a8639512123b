import { RunClaimRefusedError } from './errors.js';
import { encodeValue, LedgerRun, type ClaimOutcome, type IdempotencyLedger } from './ledger.js';
import { defineScript, runScript } from '../redis/scripts.js';
import { completionWriter, type LedgerReply } from './ledger-batch.js';
import { duplicatesRanUnclaimed } from './metrics.js';
import type { ExactlyOnce, RunExactlyOnceOptions } from './run-exactly-once.js';
import { logOf } from './run-lease.js';
import { CLAIM_TX_STEP_LUA } from './ledger-lua.js';
import { txStepKeys } from './redis-tx.js';
import { corkUntilTurnEnds } from '../redis/cork.js';
import type { StepHost } from './steps.js';

const CLAIM_TX_STEP_SCRIPT = defineScript(CLAIM_TX_STEP_LUA);

/**
 * A run claimed at its first effect instead of before its handler starts (README, "The ledger": when a run
 * is claimed). Only for the first delivery of a job whose run is recorded in the job's own hash: nothing
 * else can hold that run then except a redelivery of the same job after it stalled, and a run that has made
 * no effect yet has nothing a duplicate could repeat.
 *
 * - `ctx.step`, `ctx.lock`, `ctx.enqueue` claim first (`claimed()`, one awaited round trip), then act;
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
  /** Set when the claim was refused; the delivery ends by it even if the handler caught the error. */
  refused: RunClaimRefusedError | undefined;

  constructor(
    private readonly ledger: IdempotencyLedger,
    readonly idempotencyKey: string,
    private readonly jobKey: string,
    /** The run's queue (its record's hash tag on a cluster, see RunRecordPlace). */
    private readonly queue: string | undefined,
    readonly owner: string,
    private readonly claimRun: () => Promise<ClaimOutcome>,
    /** Told once the run is this delivery's (starts its lease). */
    private readonly onClaimed: (run: LedgerRun, outcome: ClaimOutcome & { kind: 'claimed' }) => void,
  ) {}

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
    return this.run?.recordedStep(id);
  }

  claimed(): Promise<LedgerRun> {
    return (this.claiming ??= this.claim());
  }

  async recordStep(id: string, value: unknown): Promise<boolean> {
    return (await this.claimed()).recordStep(id, value);
  }

  async recordTxStep(id: string, value: unknown, commands: readonly (string | number)[][]): Promise<boolean> {
    if (this.claiming) return this.txStepOnClaimed(await this.claiming, id, value, commands);
    let committed = false;
    this.claiming = this.claimWithTxStep(id, value, commands).then((run) => {
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
    const outcome = await this.claimRun();
    if (outcome.kind !== 'claimed') throw (this.refused = new RunClaimRefusedError(this.idempotencyKey, outcome));
    this.run = outcome.run;
    this.onClaimed(outcome.run, outcome);
    return outcome.run;
  }

  /** The fold: claims a new run and commits the step in one script; undefined when the run is not new. */
  private async claimWithTxStep(id: string, value: unknown, commands: readonly (string | number)[][]): Promise<LedgerRun | undefined> {
    const at = this.ledger.locate(this.idempotencyKey, { kind: 'job', jobKey: this.jobKey, queue: this.queue });
    const encoded = encodeValue(value);
    const keys = txStepKeys(this.ledger.redis, at.record, at.steps, commands);
    const argv: (string | number)[] = [this.owner, this.ledger.leaseMs, id, encoded, this.ledger.unfinishedTtlMs];
    for (const c of commands) argv.push(c.length, ...c);
    corkUntilTurnEnds(this.ledger.redis); // the first steps of the runs of this turn leave in one write
    if ((await runScript(this.ledger.redis, CLAIM_TX_STEP_SCRIPT, keys, argv)) !== 1) return undefined;
    const run = new LedgerRun(this.ledger, this.idempotencyKey, at, this.owner, new Map([[id, encoded]]));
    this.run = run;
    this.onClaimed(run, { kind: 'claimed', run, tookOver: false });
    return run;
  }
}

/**
 * Records the result of a lazily claimed run that made no effect: claim and completion in one write, ahead
 * of the acknowledgement like any result. If another delivery of the job holds or completed the run (the
 * job stalled and was redelivered while this one ran), this delivery's handler ran beside it: that is the
 * documented cost of the lazy claim for a handler without steps, counted and logged, and nothing is written.
 */
export async function recordUnclaimed(eo: ExactlyOnce, opts: RunExactlyOnceOptions, jobKey: string, owner: string, result: unknown): Promise<unknown> {
  const args = ['j', owner, encodeValue(result)];
  const outcome = (reply: LedgerReply | Error) => {
    if (reply instanceof Error) {
      logOf(opts).error({ idempotencyKey: opts.key, err: { message: reply.message } }, 'could not record the result; a redelivery may run it again');
    } else if (reply !== 1) {
      duplicatesRanUnclaimed.inc(opts.labels);
      logOf(opts).warn(
        { idempotencyKey: opts.key, otherDelivery: reply === 2 ? 'completed' : 'running' },
        'a handler without steps ran beside another delivery of the same job; its result is not recorded',
      );
    }
  };
  if (opts.ackConnection) {
    await completionWriter(opts.ackConnection).complete(jobKey, args, outcome, 'completeUnclaimed');
    return result;
  }
  outcome(await eo.ledger.batcher.call('completeUnclaimed', jobKey, args).catch((err: Error) => err));
  return result;
}
