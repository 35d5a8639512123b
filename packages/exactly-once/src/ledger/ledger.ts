import { defineScript, jobKeyOf, keyspaceOn, queueKeyspace, runScript, TickworkError, type RedisClient } from '@tickwork/core';
import { LedgerBatcher, type AheadOutcome, type CompletionWriter, type LedgerReply } from './ledger-batch.js';
import { COMPACTED_LUA, JOB_RECORD_FIELD, parseLedgerRecord, TX_STEP_LUA } from './ledger-lua.js';
import { decodeValue, encodeValue, newOwner } from './record-values.js';
import { runTxStepScript } from './tx-step.js';

export { JOB_RECORD_FIELD };

const TX_STEP_SCRIPT = defineScript(TX_STEP_LUA);
const COMPACTED_SCRIPT = defineScript(COMPACTED_LUA);

/**
 * The idempotency ledger: one Redis record per logical run, holding its state (`running` | `idle` |
 * `done`), the lease owner and expiry, the claim count and the recorded result, plus a hash of its steps'
 * results (`<prefix>:ledger:<idempotency key>:steps`). Where the record lives, and so how long a
 * duplicate is suppressed, is the run's place (RunRecordPlace). The format and the Lua that reads and
 * writes it are in ledger-lua.ts; operations are sent in batches under load (ledger-batch.ts).
 *
 * Lease times come from the Redis server clock (`TIME`), never from a worker's clock, so skew between
 * worker hosts cannot make a live lease look expired.
 */

export const DEFAULT_LEASE_MS = 30_000;
/** How long a completed run with an explicit key suppresses duplicates, unless its job sets its own window. */
export const DEFAULT_DEDUPE_WINDOW_MS = 24 * 3600 * 1000;
/** How long an unfinished run (failed, interrupted, dead-lettered) keeps its record and step results. */
export const DEFAULT_UNFINISHED_TTL_MS = 7 * 24 * 3600 * 1000;
/**
 * How long a done run with its own key keeps its full record (its result, its completion time) before the
 * sweeper replaces it with a fingerprint (compact-lua.ts): long enough for the duplicates that come soon
 * after a run (a redelivery after a stall, an operator's retry) to get its result back.
 */
export const DEFAULT_FULL_RECORD_MS = 5 * 60_000;
/** The longest stage bucket (compact-lua.ts): a done record lives its full span plus up to one bucket, plus the sweeper's pace. */
const MAX_BUCKET_MS = 60_000;

/**
 * Where a run's record lives (see ledger-lua.ts):
 * - `key`: its own key, kept `windowMs` once done (whole, then compacted) — runs with an explicit idempotency key;
 * - `job`: a field of its BullMQ job's hash (`jobKey`, `<prefix>:<queue>:<job id>`), kept as long as BullMQ
 *   keeps the job — runs named by their job id, which BullMQ can deliver again only while it keeps the job.
 * `queue`: the queue the run belongs to. On Redis Cluster its record and step results live under the
 * queue's hash tag (redis/keyspace.ts), so the queue must be named there; on one Redis it changes no key.
 */
export type RunRecordPlace = { kind: 'key'; windowMs?: number | undefined; queue?: string | undefined } | JobRecordPlace;
/** A run recorded in its job's own hash (see RunRecordPlace). */
export type JobRecordPlace = { kind: 'job'; jobKey: string; queue?: string | undefined };

/** The hash BullMQ keeps job `jobId` of `queue` in (BullMQ's `<prefix>:<queue>:<id>` layout, under the queue's tag on a cluster). */
export function jobRecordKey(prefix: string, queue: string, jobId: string, clustered = false): string {
  return jobKeyOf(queueKeyspace(prefix, queue, clustered), queue, jobId);
}

/**
 * A claim sent in a script call of the caller's own (CLAIM_FN_LUA's `ledgerClaim` with these arguments on
 * the run's record key), answering as op `c` does: the schedules' history claims a scheduled run with its
 * start record in one call. Single Redis only (the record and the caller's keys share no slot on a cluster).
 */
export type ClaimVia = (record: string, args: (string | number)[]) => Promise<LedgerReply>;

export type ClaimOutcome =
  | { kind: 'claimed'; run: LedgerRun; tookOver: boolean }
  /** `compacted`: the run's record had been compacted to a fingerprint, so its result is not known (undefined). */
  | { kind: 'done'; result: unknown; completedAt: Date | undefined; compacted?: true }
  /** `holder`: the owner token holding the live lease; `holderDeadInMs`: when its process counts as dead if it stays silent (claim-run.ts). */
  | { kind: 'busy'; leaseLeftMs: number; holder: string; holderDeadInMs?: number };

export interface LedgerOptions {
  /** Key prefix (QUEUE_PREFIX); ledger keys are `<prefix>:ledger:<key>` (`<prefix>:{<queue>}:ledger:<key>` on a cluster). */
  prefix: string;
  /** How long a claim stays valid without renewal: how soon a crashed worker's run can be taken over. */
  leaseMs?: number;
  /** How long a completed run with its own key suppresses duplicates, when its place names none. Default 24 hours. */
  windowMs?: number;
  /** How long an unfinished run's record and step results are kept after their last write. Default 7 days. */
  unfinishedTtlMs?: number;
  /**
   * How long a done run with its own key keeps its full record before it is compacted to a fingerprint, when
   * its window is at least twice as long (shorter windows keep the full record). Default 5 minutes.
   */
  fullRecordMs?: number;
}

/** What the ledger holds for one run; for operators and tests. */
export interface LedgerEntry {
  state: 'running' | 'idle' | 'done';
  owner: string | undefined;
  leaseUntil: Date | undefined;
  claims: number;
  result: unknown;
  completedAt: Date | undefined;
  steps: Record<string, unknown>;
  /** Done, and compacted to a fingerprint: no owner, claims, result or completion time is known any more. */
  compacted?: true;
}

/** A run's steps hash, beside its own key (in both modes: a re-driven run finds its steps where they were). */
const stepsKey = (runKey: string) => `${runKey}:steps`;

export class IdempotencyLedger {
  readonly leaseMs: number;
  readonly windowMs: number;
  readonly unfinishedTtlMs: number;
  readonly fullRecordMs: number;
  /** How long one stage of done records gathers before the sweeper may compact it (compact-lua.ts). */
  readonly bucketMs: number;
  /** @internal the ledger's own connection, shared with its runs */
  readonly redis: RedisClient;
  /** @internal shared with this ledger's runs */
  readonly batcher: LedgerBatcher;

  constructor(redis: RedisClient, readonly opts: LedgerOptions) {
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    this.windowMs = opts.windowMs ?? DEFAULT_DEDUPE_WINDOW_MS;
    this.unfinishedTtlMs = opts.unfinishedTtlMs ?? DEFAULT_UNFINISHED_TTL_MS;
    this.fullRecordMs = opts.fullRecordMs ?? DEFAULT_FULL_RECORD_MS;
    if (!Number.isInteger(this.fullRecordMs) || this.fullRecordMs < 100) throw new TickworkError(`ledger fullRecordMs ${this.fullRecordMs} must be an integer of at least 100 ms`);
    this.bucketMs = Math.min(MAX_BUCKET_MS, this.fullRecordMs);
    if (!Number.isInteger(this.leaseMs) || this.leaseMs < 100) {
      throw new TickworkError(`ledger leaseMs ${this.leaseMs} must be an integer of at least 100 ms`);
    }
    assertTtl('windowMs', this.windowMs, this.leaseMs);
    assertTtl('unfinishedTtlMs', this.unfinishedTtlMs, this.leaseMs);
    this.redis = redis;
    this.batcher = new LedgerBatcher(redis);
  }

  /**
   * The record key of a run with its own key. On a cluster it is under `queue`'s tag, so an idempotency
   * key is scoped to its queue there; a cluster without a queue named is a bug, refused.
   */
  keyOf(idempotencyKey: string, queue?: string): string {
    return `${this.baseOf(queue, `ledger record of "${idempotencyKey}"`)}:ledger:${idempotencyKey}`;
  }

  /** The base of the keys of `queue`'s compacted runs (compact-lua.ts): beside their records. */
  fpRootOf(queue?: string): string {
    return `${this.baseOf(queue, 'compacted runs')}:ledger-fp`;
  }

  private baseOf(queue: string | undefined, what: string): string {
    if (queue !== undefined) return keyspaceOn(this.redis, this.opts.prefix, queue).runPrefix;
    if (this.redis.isCluster) throw new TickworkError(`${what}: on Redis Cluster a run's record lives under its queue's tag; name the queue`);
    return this.opts.prefix; // one Redis: every queue's runPrefix is the prefix
  }

  /** The hash of a run's recorded steps (step id to encoded result), wherever its record lives. */
  stepsKeyOf(idempotencyKey: string, queue?: string): string {
    return stepsKey(this.keyOf(idempotencyKey, queue));
  }

  /**
   * Atomically claims the run named `idempotencyKey` for a new owner (one per delivery). `takeOverFrom`: an
   * owner known to be dead (its process stopped beating): its live lease is taken over, but only if that
   * owner still holds it (compare-and-set in the script), instead of answering `busy`.
   */
  async claim(
    idempotencyKey: string,
    place: RunRecordPlace = { kind: 'key' },
    owner: string = newOwner(),
    takeOverFrom?: string,
    via?: ClaimVia,
  ): Promise<ClaimOutcome> {
    if (owner.includes('|')) throw new TickworkError(`ledger owner "${owner}" must not contain "|" (the record's separator)`);
    const at = this.locate(idempotencyKey, place);
    const args: (string | number)[] = [at.mode, owner, this.leaseMs, this.unfinishedTtlMs, at.steps, at.fpRoot, at.doneTtlMs];
    if (takeOverFrom !== undefined) args.push(takeOverFrom);
    // A claim sent again by the same owner is claimed again (its record already names it), so a failed
    // call of the caller's own can be followed by the ledger's.
    const reply = via ? await via(at.record, args).catch(() => this.batcher.call('claim', at.record, args)) : await this.batcher.call('claim', at.record, args);
    if (typeof reply === 'number') return { kind: 'claimed', tookOver: false, run: new LedgerRun(this, idempotencyKey, at, owner, undefined) };
    const [kind, a, b] = reply;
    if (kind === 'done') {
      if (reply[3] === 'c') return { kind, result: undefined, completedAt: undefined, compacted: true };
      return { kind, result: decodeValue(a ?? ''), completedAt: b ? new Date(Number(b)) : undefined };
    }
    if (kind === 'busy') return { kind, leaseLeftMs: Number(a), holder: b ?? '' };
    let steps: Map<string, string> | undefined;
    if (reply.length > 2) steps = new Map();
    for (let i = 2; i + 1 < reply.length; i += 2) steps?.set(reply[i] as string, reply[i + 1] as string);
    return { kind: 'claimed', tookOver: a === '1', run: new LedgerRun(this, idempotencyKey, at, owner, steps) };
  }

  /** @internal where the record and the steps of a run are, and how long it is remembered once done. */
  locate(idempotencyKey: string, place: RunRecordPlace): RunLocation {
    const key = this.keyOf(idempotencyKey, place.queue);
    if (place.kind === 'job') return { mode: 'j', record: place.jobKey, steps: stepsKey(key), doneTtlMs: 0, fpRoot: '' };
    const windowMs = place.windowMs ?? this.windowMs;
    // A window shorter than twice the full record's span would save little: such a record stays whole.
    const fpRoot = windowMs >= 2 * this.fullRecordMs ? this.fpRootOf(place.queue) : '';
    return { mode: 'k', record: key, steps: stepsKey(key), doneTtlMs: windowMs, fpRoot };
  }

  async inspect(idempotencyKey: string, place: RunRecordPlace = { kind: 'key' }): Promise<LedgerEntry | undefined> {
    const at = this.locate(idempotencyKey, place);
    const [raw, stepFields] = await Promise.all([
      at.mode === 'j' ? this.redis.hget(at.record, JOB_RECORD_FIELD) : this.redis.get(at.record),
      this.redis.hgetall(at.steps),
    ]);
    const record = raw === null ? undefined : parseLedgerRecord(raw);
    if (!record) return at.fpRoot === '' ? undefined : this.inspectCompacted(at);
    const steps: Record<string, unknown> = {};
    for (const [id, value] of Object.entries(stepFields)) steps[id] = decodeValue(value);
    const state = ({ r: 'running', i: 'idle', d: 'done' } as const)[record.state];
    return {
      state,
      owner: record.owner || undefined,
      leaseUntil: state === 'running' ? new Date(record.time) : undefined,
      claims: record.claims,
      result: state === 'done' ? decodeValue(record.result) : undefined,
      completedAt: state === 'done' ? new Date(record.time) : undefined,
      steps,
    };
  }

  /** A run without a record: done and compacted, or unknown. */
  private async inspectCompacted(at: RunLocation): Promise<LedgerEntry | undefined> {
    if ((await runScript(this.redis, COMPACTED_SCRIPT, [at.record], [at.fpRoot, at.doneTtlMs])) !== 1) return undefined;
    return { state: 'done', owner: undefined, leaseUntil: undefined, claims: 0, result: undefined, completedAt: undefined, steps: {}, compacted: true };
  }
}

/**
 * One claimed run. Every write is fenced by the owner token inside its script: once another delivery has
 * taken the run over, this one can neither record steps nor complete it.
 */
export class LedgerRun {
  private readonly key: string;

  constructor(
    private readonly ledger: IdempotencyLedger,
    readonly idempotencyKey: string,
    private readonly at: RunLocation,
    readonly owner: string,
    /** Encoded results of the steps recorded by earlier attempts (created on first use: most runs have none). */
    private steps: Map<string, string> | undefined,
  ) {
    this.key = at.record;
  }

  /** The recorded result of step `id`, if an earlier attempt (or this one) finished it. */
  recordedStep(id: string): { value: unknown } | undefined {
    const raw = this.steps?.get(id);
    return raw === undefined ? undefined : { value: decodeValue(raw) };
  }

  get recordedStepCount(): number {
    return this.steps?.size ?? 0;
  }

  /** False when the lease was lost. */
  async recordStep(id: string, value: unknown): Promise<boolean> {
    const encoded = encodeValue(value);
    const ok = (await this.ledger.batcher.call('step', this.key, [this.at.mode, this.owner, id, encoded, this.at.steps, this.ledger.unfinishedTtlMs])) === 1;
    if (ok) (this.steps ??= new Map()).set(id, encoded);
    return ok;
  }

  /**
   * Commits a Redis step: `commands` (each `[command, key, ...args]`) and the step's record in one script,
   * only while this delivery owns the run. False when it does not: nothing was written.
   */
  async recordTxStep(id: string, value: unknown, commands: readonly (string | number)[][]): Promise<boolean> {
    const encoded = encodeValue(value);
    const words = [this.at.mode, this.owner, id, encoded, this.ledger.unfinishedTtlMs];
    const ok = (await runTxStepScript(this.ledger.redis, TX_STEP_SCRIPT, this.key, this.at.steps, words, commands)) === 1;
    if (ok) (this.steps ??= new Map()).set(id, encoded);
    return ok;
  }

  async renew(): Promise<boolean> {
    return (await this.ledger.batcher.call('renew', this.key, [this.at.mode, this.owner, this.ledger.leaseMs])) === 1;
  }

  async complete(result: unknown): Promise<boolean> {
    return (await this.ledger.batcher.call('complete', this.key, this.completeArgs(result))) === 1;
  }

  private completeArgs(result: unknown): (string | number)[] {
    const args = [this.at.mode, this.owner, encodeValue(result), this.at.doneTtlMs, this.at.steps];
    // A record that will be compacted is listed in its stage by the same script (compact-lua.ts).
    if (this.at.fpRoot !== '') args.push(this.at.fpRoot, this.ledger.bucketMs);
    return args;
  }

  /**
   * Records the result through `writer` (the connection the job will be acknowledged on) without waiting
   * for the reply; resolves once written, or returns undefined when it rides in the acknowledgement (see
   * CompletionWriter). `outcome` gets the reply later.
   */
  completeAhead(writer: CompletionWriter, result: unknown, outcome: AheadOutcome, jobKey?: string): Promise<void> | undefined {
    return writer.complete(this.key, this.completeArgs(result), outcome, 'complete', jobKey);
  }

  async release(): Promise<boolean> {
    return (await this.ledger.batcher.call('release', this.key, [this.at.mode, this.owner])) === 1;
  }
}

/**
 * @internal a run's record and steps keys, its record mode (ledger-lua.ts), its done TTL (0 in a job's
 * hash) and the base of its compacted form ('' when it is never compacted: compact-lua.ts).
 */
export interface RunLocation {
  mode: 'k' | 'j';
  record: string;
  steps: string;
  doneTtlMs: number;
  fpRoot: string;
}

function assertTtl(name: string, ms: number, leaseMs: number): void {
  if (!Number.isInteger(ms) || ms < leaseMs) {
    throw new TickworkError(`ledger ${name} ${ms} must be an integer number of ms no shorter than the lease (${leaseMs} ms)`);
  }
}
