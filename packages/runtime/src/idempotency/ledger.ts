import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { TickworkError } from '../errors.js';
import { LedgerBatcher, type AheadOutcome, type CompletionWriter } from './ledger-batch.js';
import { parseRecord } from './ledger-lua.js';

/**
 * The idempotency ledger: one Redis record per logical run (`<prefix>:ledger:<idempotency key>`), holding
 * its state (`running` | `idle` | `done`), the lease owner and expiry, the claim count and the recorded
 * result, plus a hash of its steps' results beside it (`...:steps`). The format and the Lua that reads and
 * writes it are in ledger-batch.ts; operations are sent in batches under load.
 *
 * Lease times come from the Redis server clock (`TIME`), never from a worker's clock, so skew between
 * worker hosts cannot make a live lease look expired.
 */

export const DEFAULT_LEASE_MS = 30_000;
export const DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000;

/** Values are stored as `{"v": value}` so `undefined` and `null` results survive the round trip. */
export function encodeValue(value: unknown): string {
  return JSON.stringify({ v: value });
}

export function decodeValue(raw: string): unknown {
  if (raw === '') return undefined;
  return (JSON.parse(raw) as { v?: unknown }).v;
}

export type ClaimOutcome =
  | { kind: 'claimed'; run: LedgerRun; tookOver: boolean }
  | { kind: 'done'; result: unknown; completedAt: Date | undefined }
  | { kind: 'busy'; leaseLeftMs: number };

export interface LedgerOptions {
  /** Key prefix (QUEUE_PREFIX); ledger keys are `<prefix>:idem:<key>`. */
  prefix: string;
  /** How long a claim stays valid without renewal: how soon a crashed worker's run can be taken over. */
  leaseMs?: number;
  /** How long completed runs are remembered (and duplicates suppressed). Default 7 days. */
  retentionMs?: number;
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
}

export class IdempotencyLedger {
  readonly leaseMs: number;
  readonly retentionMs: number;
  private readonly redis: Redis;
  /** @internal shared with this ledger's runs */
  readonly batcher: LedgerBatcher;

  constructor(redis: Redis, readonly opts: LedgerOptions) {
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    this.retentionMs = opts.retentionMs ?? DEFAULT_RETENTION_MS;
    if (!Number.isInteger(this.leaseMs) || this.leaseMs < 100) {
      throw new TickworkError(`ledger leaseMs ${this.leaseMs} must be an integer of at least 100 ms`);
    }
    if (!Number.isInteger(this.retentionMs) || this.retentionMs < this.leaseMs) {
      throw new TickworkError(`ledger retentionMs ${this.retentionMs} must be an integer no shorter than the lease`);
    }
    this.redis = redis;
    this.batcher = new LedgerBatcher(redis);
  }

  keyOf(idempotencyKey: string): string {
    return `${this.opts.prefix}:ledger:${idempotencyKey}`;
  }

  /** Atomically claims the run named `idempotencyKey` for a new owner (one per delivery). */
  async claim(idempotencyKey: string, owner: string = randomUUID()): Promise<ClaimOutcome> {
    if (owner.includes('|')) throw new TickworkError(`ledger owner "${owner}" must not contain "|" (the record's separator)`);
    const reply = await this.batcher.call('claim', this.keyOf(idempotencyKey), [owner, this.leaseMs, this.retentionMs]);
    if (typeof reply === 'number') return { kind: 'claimed', tookOver: false, run: new LedgerRun(this, idempotencyKey, owner, undefined) };
    const [kind, a, b] = reply;
    if (kind === 'done') {
      return { kind, result: decodeValue(a ?? ''), completedAt: b ? new Date(Number(b)) : undefined };
    }
    if (kind === 'busy') return { kind, leaseLeftMs: Number(a) };
    let steps: Map<string, string> | undefined;
    if (reply.length > 2) steps = new Map();
    for (let i = 2; i + 1 < reply.length; i += 2) steps?.set(reply[i] as string, reply[i + 1] as string);
    return { kind: 'claimed', tookOver: a === '1', run: new LedgerRun(this, idempotencyKey, owner, steps) };
  }

  async inspect(idempotencyKey: string): Promise<LedgerEntry | undefined> {
    const key = this.keyOf(idempotencyKey);
    const [raw, stepFields] = await Promise.all([this.redis.get(key), this.redis.hgetall(`${key}:steps`)]);
    const record = raw === null ? undefined : parseRecord(raw);
    if (!record) return undefined;
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
    readonly owner: string,
    /** Encoded results of the steps recorded by earlier attempts (created on first use: most runs have none). */
    private steps: Map<string, string> | undefined,
  ) {
    this.key = ledger.keyOf(idempotencyKey);
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
    const ok = (await this.ledger.batcher.call('step', this.key, [this.owner, id, encoded])) === 1;
    if (ok) (this.steps ??= new Map()).set(id, encoded);
    return ok;
  }

  async renew(): Promise<boolean> {
    return (await this.ledger.batcher.call('renew', this.key, [this.owner, this.ledger.leaseMs])) === 1;
  }

  async complete(result: unknown): Promise<boolean> {
    return (await this.ledger.batcher.call('complete', this.key, [this.owner, encodeValue(result), this.ledger.retentionMs])) === 1;
  }

  /**
   * Records the result through `writer` (the connection the job will be acknowledged on) without waiting
   * for the reply; resolves once written (see CompletionWriter). `outcome` gets the reply later.
   */
  completeAhead(writer: CompletionWriter, result: unknown, outcome: AheadOutcome): Promise<void> {
    return writer.complete(this.key, [this.owner, encodeValue(result), this.ledger.retentionMs], outcome);
  }

  async release(): Promise<boolean> {
    return (await this.ledger.batcher.call('release', this.key, [this.owner])) === 1;
  }
}
