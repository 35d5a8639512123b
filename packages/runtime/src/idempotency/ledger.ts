import { createHash, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { TickworkError } from '../errors.js';

/**
 * The idempotency ledger: one Redis hash per logical run (`<prefix>:idem:<idempotency key>`), holding
 * its state (`running` | `idle` | `done`), the lease owner and expiry, the recorded result and the
 * results of its steps (fields `s:<step id>`). Every script touches that one key only, so the ledger
 * works unchanged on Redis Cluster.
 *
 * Lease times come from the Redis server clock (`TIME`), never from a worker's clock, so skew between
 * worker hosts cannot make a live lease look expired.
 */

export const DEFAULT_LEASE_MS = 30_000;
export const DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000;

const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/**
 * Claims a run. Returns 1 when it claimed a new run (the common case, kept to one small reply), else
 * {'done', result, completedAt} | {'busy', msLeftOnLease} | {'claimed', tookOver, stepId1, stepValue1, ...}.
 * A record that existed returns its recorded steps so a resumed run needs no round trip per step.
 */
const CLAIM = `
local key, owner = KEYS[1], ARGV[1]
local leaseMs, retentionMs = tonumber(ARGV[2]), tonumber(ARGV[3])
local h = redis.call('HMGET', key, 'state', 'owner', 'leaseUntil')
local state = h[1]
if state == 'done' then
  local d = redis.call('HMGET', key, 'result', 'completedAt')
  return {'done', d[1] or '', d[2] or ''}
end
${NOW}
if not state then
  redis.call('HSET', key, 'state', 'running', 'owner', owner, 'leaseUntil', string.format('%d', now + leaseMs), 'claims', '1')
  redis.call('PEXPIRE', key, retentionMs)
  return 1
end
local tookOver = '0'
if state == 'running' then
  local holder = h[2]
  local leaseUntil = tonumber(h[3] or '0')
  if holder ~= owner and leaseUntil > now then
    return {'busy', string.format('%d', leaseUntil - now)}
  end
  if holder ~= owner then tookOver = '1' end
end
redis.call('HSET', key, 'state', 'running', 'owner', owner, 'leaseUntil', string.format('%d', now + leaseMs))
redis.call('HINCRBY', key, 'claims', 1)
redis.call('PEXPIRE', key, retentionMs)
local out = {'claimed', tookOver}
local all = redis.call('HGETALL', key)
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 2) == 's:' then
    out[#out + 1] = string.sub(all[i], 3)
    out[#out + 1] = all[i + 1]
  end
end
return out
`;

/** Runs only while the caller still owns the running lease: the fence for every later write. */
const OWNED = `
local key, owner = KEYS[1], ARGV[1]
local held = redis.call('HMGET', key, 'state', 'owner')
if held[1] ~= 'running' or held[2] ~= owner then
  return 0
end
`;

const RENEW = `${OWNED}${NOW}
redis.call('HSET', key, 'leaseUntil', string.format('%d', now + tonumber(ARGV[2])))
return 1
`;

const RECORD_STEP = `${OWNED}
redis.call('HSET', key, 's:' .. ARGV[2], ARGV[3])
return 1
`;

const COMPLETE = `${OWNED}${NOW}
redis.call('HSET', key, 'state', 'done', 'result', ARGV[2], 'completedAt', string.format('%d', now))
redis.call('HDEL', key, 'leaseUntil')
redis.call('PEXPIRE', key, tonumber(ARGV[3]))
return 1
`;

/** A failed attempt gives the run back at once (keeping its steps) so the retry need not wait for the lease. */
const RELEASE = `${OWNED}
redis.call('HSET', key, 'state', 'idle')
redis.call('HDEL', key, 'owner', 'leaseUntil')
return 1
`;

/**
 * A Lua script run by EVALSHA, falling back to EVAL when the server does not know it (a new connection,
 * a restarted Redis). Sent as a plain command rather than through ioredis defineCommand, whose wrapper
 * costs a second promise and closures per call: the ledger's two calls per job are on the hot path.
 */
class LedgerScript {
  private readonly sha: string;
  constructor(private readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  async run(redis: Redis, key: string, ...args: (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, 1, key, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.includes('NOSCRIPT')) throw err;
      return redis.eval(this.lua, 1, key, ...args);
    }
  }
}

const SCRIPTS = {
  claim: new LedgerScript(CLAIM),
  renew: new LedgerScript(RENEW),
  step: new LedgerScript(RECORD_STEP),
  complete: new LedgerScript(COMPLETE),
  release: new LedgerScript(RELEASE),
};

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
  }

  keyOf(idempotencyKey: string): string {
    return `${this.opts.prefix}:idem:${idempotencyKey}`;
  }

  /** Atomically claims the run named `idempotencyKey` for a new owner (one per delivery). */
  async claim(idempotencyKey: string, owner: string = randomUUID()): Promise<ClaimOutcome> {
    const reply = (await SCRIPTS.claim.run(this.redis, this.keyOf(idempotencyKey), owner, this.leaseMs, this.retentionMs)) as
      | 1
      | string[];
    if (reply === 1) return { kind: 'claimed', tookOver: false, run: new LedgerRun(this, this.redis, idempotencyKey, owner, undefined) };
    const [kind, a, b] = reply;
    if (kind === 'done') {
      return { kind, result: decodeValue(a ?? ''), completedAt: b ? new Date(Number(b)) : undefined };
    }
    if (kind === 'busy') return { kind, leaseLeftMs: Number(a) };
    let steps: Map<string, string> | undefined;
    if (reply.length > 2) steps = new Map();
    for (let i = 2; i + 1 < reply.length; i += 2) steps?.set(reply[i] as string, reply[i + 1] as string);
    return { kind: 'claimed', tookOver: a === '1', run: new LedgerRun(this, this.redis, idempotencyKey, owner, steps) };
  }

  async inspect(idempotencyKey: string): Promise<LedgerEntry | undefined> {
    const h = await this.redis.hgetall(this.keyOf(idempotencyKey));
    if (!h.state) return undefined;
    const steps: Record<string, unknown> = {};
    for (const [field, value] of Object.entries(h)) if (field.startsWith('s:')) steps[field.slice(2)] = decodeValue(value);
    return {
      state: h.state as LedgerEntry['state'],
      owner: h.owner,
      leaseUntil: h.leaseUntil ? new Date(Number(h.leaseUntil)) : undefined,
      claims: Number(h.claims ?? 0),
      result: h.result === undefined ? undefined : decodeValue(h.result),
      completedAt: h.completedAt ? new Date(Number(h.completedAt)) : undefined,
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
    private readonly redis: Redis,
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
    const ok = (await SCRIPTS.step.run(this.redis, this.key, this.owner, id, encoded)) === 1;
    if (ok) (this.steps ??= new Map()).set(id, encoded);
    return ok;
  }

  async renew(): Promise<boolean> {
    return (await SCRIPTS.renew.run(this.redis, this.key, this.owner, this.ledger.leaseMs)) === 1;
  }

  async complete(result: unknown): Promise<boolean> {
    return (await SCRIPTS.complete.run(this.redis, this.key, this.owner, encodeValue(result), this.ledger.retentionMs)) === 1;
  }

  async release(): Promise<boolean> {
    return (await SCRIPTS.release.run(this.redis, this.key, this.owner)) === 1;
  }
}
