import { startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { IdempotencyLedger } from './ledger.js';
import { LeaseLostError, StepError } from './errors.js';
import { createExactlyOnce, runExactlyOnce } from './run-exactly-once.js';
import { createSteps } from './steps.js';
import { duplicatesSuppressed } from './metrics.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let server: RedisServerHandle;
let redis: Redis;
const log = pino({ level: 'silent' });
const labels = { queue: 'q', job: 'j' };
let n = 0;
const freshKey = () => `test-${++n}-${Math.random().toString(36).slice(2)}`;

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
});
afterAll(async () => {
  await server.stop();
});

describe('IdempotencyLedger', () => {
  it('claims a new key, reports it busy to another owner, and returns the recorded result once done', async () => {
    const ledger = new IdempotencyLedger(redis, { prefix: 'tw', leaseMs: 5000 });
    const key = freshKey();
    const first = await ledger.claim(key, { kind: 'key' }, 'a');
    expect(first.kind).toBe('claimed');
    const second = await ledger.claim(key, { kind: 'key' }, 'b');
    expect(second.kind).toBe('busy');
    if (second.kind === 'busy') expect(second.leaseLeftMs).toBeGreaterThan(4000);
    if (first.kind !== 'claimed') throw new Error('unreachable');
    expect(await first.run.complete({ ok: 1 })).toBe(true);
    const third = await ledger.claim(key, { kind: 'key' }, 'c');
    expect(third).toMatchObject({ kind: 'done', result: { ok: 1 } });
    // Kept under its own key for the dedupe window (24 hours by default), so duplicates are suppressed later.
    const ttl = await redis.pttl(ledger.keyOf(key));
    expect(ttl).toBeGreaterThan(23 * 3600 * 1000);
    expect(ttl).toBeLessThanOrEqual(24 * 3600 * 1000);
  });

  it('lets another owner take over once the lease expired, and then fences the old owner out', async () => {
    const ledger = new IdempotencyLedger(redis, { prefix: 'tw', leaseMs: 150 });
    const key = freshKey();
    const a = await ledger.claim(key, { kind: 'key' }, 'a');
    if (a.kind !== 'claimed') throw new Error('expected a claim');
    expect(await a.run.recordStep('one', 1)).toBe(true);
    await new Promise((r) => setTimeout(r, 250)); // let the lease lapse: this is the behaviour under test
    const b = await ledger.claim(key, { kind: 'key' }, 'b');
    expect(b).toMatchObject({ kind: 'claimed', tookOver: true });
    if (b.kind !== 'claimed') throw new Error('unreachable');
    expect(b.run.recordedStep('one')).toEqual({ value: 1 });
    // The paused first owner can no longer renew, record or complete.
    expect(await a.run.renew()).toBe(false);
    expect(await a.run.recordStep('two', 2)).toBe(false);
    expect(await a.run.complete('a')).toBe(false);
    expect(await b.run.complete('b')).toBe(true);
    expect((await ledger.inspect(key))?.result).toBe('b');
  });

  it('gives a failed run back at once, keeping its steps for the retry', async () => {
    const ledger = new IdempotencyLedger(redis, { prefix: 'tw', leaseMs: 60_000 });
    const key = freshKey();
    const a = await ledger.claim(key, { kind: 'key' }, 'a');
    if (a.kind !== 'claimed') throw new Error('expected a claim');
    await a.run.recordStep('charge:1', { id: 'ch_1' });
    await a.run.release();
    const b = await ledger.claim(key, { kind: 'key' }, 'b');
    expect(b).toMatchObject({ kind: 'claimed', tookOver: false });
    if (b.kind === 'claimed') expect(b.run.recordedStep('charge:1')).toEqual({ value: { id: 'ch_1' } });
  });

  it('refuses a lease shorter than 100 ms with a message saying so', () => {
    expect(() => new IdempotencyLedger(redis, { prefix: 'tw', leaseMs: 5 })).toThrow(/at least 100 ms/);
  });
});

describe('steps', () => {
  it('runs each step once across attempts and returns recorded results on the retry', async () => {
    const ledger = new IdempotencyLedger(redis, { prefix: 'tw', leaseMs: 60_000 });
    const key = freshKey();
    const calls: string[] = [];
    const attempt = async (owner: string, failAfter: number) => {
      const c = await ledger.claim(key, { kind: 'key' }, owner);
      if (c.kind !== 'claimed') throw new Error('expected a claim');
      const { step } = createSteps(c.run, () => new AbortController().signal);
      const results: number[] = [];
      try {
        for (let i = 0; i < 4; i++) {
          if (i === failAfter) throw new Error('crash');
          results.push(await step(`s${i}`, async () => (calls.push(`s${i}`), i * 10)));
        }
      } catch {
        await c.run.release();
        return undefined;
      }
      expect(await c.run.complete(results)).toBe(true);
      return results;
    };
    expect(await attempt('a', 2)).toBeUndefined();
    // An unfinished run keeps its record and steps for the unfinished-run TTL (7 days by default).
    expect(await redis.pttl(ledger.stepsKeyOf(key))).toBeGreaterThan(6.9 * 24 * 3600_000);
    expect(await redis.pttl(ledger.keyOf(key))).toBeGreaterThan(6.9 * 24 * 3600_000);
    expect(await attempt('b', 99)).toEqual([0, 10, 20, 30]);
    expect(calls).toEqual(['s0', 's1', 's2', 's3']);
    // A done run is never resumed: its steps go when it completes, so they cost nothing for its window.
    expect(await redis.exists(ledger.stepsKeyOf(key))).toBe(0);
    expect(await ledger.inspect(key)).toMatchObject({ state: 'done', result: [0, 10, 20, 30], steps: {} });
  });

  it('rejects empty ids and non-JSON results with a StepError', async () => {
    const ledger = new IdempotencyLedger(redis, { prefix: 'tw', leaseMs: 60_000 });
    const c = await ledger.claim(freshKey(), { kind: 'key' }, 'a');
    if (c.kind !== 'claimed') throw new Error('expected a claim');
    const { step } = createSteps(c.run, () => new AbortController().signal);
    await expect(step('', async () => 1)).rejects.toThrow(StepError);
    await expect(step('fn', async () => () => 1)).rejects.toThrow(/not JSON-serialisable/);
  });

  it('runs steps side by side under distinct ids, and refuses a second step under an id still running', async () => {
    const ledger = new IdempotencyLedger(redis, { prefix: 'tw', leaseMs: 60_000 });
    const c = await ledger.claim(freshKey(), { kind: 'key' }, 'a');
    if (c.kind !== 'claimed') throw new Error('expected a claim');
    const { step, redisStep } = createSteps(c.run, () => new AbortController().signal);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const ids = ['a', 'b', 'c'];
    const running = ids.map((id) => step(id, async () => (await gate, id.toUpperCase())));
    await expect(step('b', async () => 'again')).rejects.toThrow(/already running in this run/);
    await expect(redisStep('c', () => 'again')).rejects.toThrow(/already running in this run/);
    open();
    expect(await Promise.all(running)).toEqual(['A', 'B', 'C']);
    // Once done, a step under any of those ids replays its own result.
    expect(await step('b', async () => 'again')).toBe('B');
    expect(await Promise.all(ids.map((id) => step(id, async () => 'again')))).toEqual(['A', 'B', 'C']);
  });
});

describe('runExactlyOnce', () => {
  it('runs the body once, suppresses a duplicate with the recorded result, and defers a concurrent delivery', async () => {
    const eo = createExactlyOnce(redis, { prefix: 'tw', leaseMs: 5000 });
    const key = freshKey();
    let runs = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const deferred: number[] = [];
    const defer = async (ms: number): Promise<never> => {
      deferred.push(ms);
      throw new Error('deferred');
    };
    const first = runExactlyOnce(eo, { key, log, labels, defer }, async () => {
      runs++;
      await gate;
      return { charged: true };
    });
    await expect(runExactlyOnce(eo, { key, log, labels, defer }, async () => runs++)).rejects.toThrow('deferred');
    expect(deferred[0]).toBeGreaterThan(100);
    release();
    expect(await first).toEqual({ charged: true });
    const before = (await duplicatesSuppressed.get()).values.find((v) => v.labels.job === 'j')?.value ?? 0;
    expect(await runExactlyOnce(eo, { key, log, labels, defer }, async () => runs++)).toEqual({ charged: true });
    const after = (await duplicatesSuppressed.get()).values.find((v) => v.labels.job === 'j')?.value ?? 0;
    expect(after - before).toBe(1);
    expect(runs).toBe(1);
  });

  it('aborts the body when its lease is taken over, and does not record its result', async () => {
    const eo = createExactlyOnce(redis, { prefix: 'tw', leaseMs: 300 });
    const key = freshKey();
    const defer = async (): Promise<never> => {
      throw new Error('deferred');
    };
    const body = runExactlyOnce(eo, { key, log, labels, defer }, async (run) => {
      // Simulate a holder cut off from renewing: another owner steals the run under a forged expiry.
      const record = (await redis.get(eo.ledger.keyOf(key))) ?? '';
      await redis.set(eo.ledger.keyOf(key), record.replace(/^r\|[^|]*\|/, 'r|someone-else|'), 'KEEPTTL');
      await new Promise<void>((resolve) => run.signal.addEventListener('abort', () => resolve(), { once: true }));
      return 'late';
    });
    await expect(body).rejects.toThrow(LeaseLostError);
    expect((await eo.ledger.inspect(key))?.state).toBe('running');
  });

  it('keeps renewing the leases of runs that outlive them, several at once from the shared timer', async () => {
    const eo = createExactlyOnce(redis, { prefix: 'tw', leaseMs: 300 });
    const keys = [freshKey(), freshKey(), freshKey()];
    const defer = async (): Promise<never> => {
      throw new Error('deferred');
    };
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const runs = keys.map((key) => runExactlyOnce(eo, { key, log, labels, defer }, async () => {
      await gate;
      return key;
    }));
    // Once every lease has been renewed to well past three of its original lengths, every run is still
    // held: a second claim finds it busy, not expired.
    const horizon = Date.now() + 900;
    await waitFor(async () => {
      const entries = await Promise.all(keys.map((key) => eo.ledger.inspect(key)));
      return entries.every((e) => (e?.leaseUntil?.getTime() ?? 0) > horizon);
    }, { timeoutMs: 10_000, what: 'the leases to be renewed past three lease lengths' });
    for (const key of keys) expect((await eo.ledger.claim(key)).kind).toBe('busy');
    release();
    expect(await Promise.all(runs)).toEqual(keys);
    for (const key of keys) expect((await eo.ledger.inspect(key))?.claims).toBe(1);
  });

  it("aborts the body's signal with the worker's reason when the worker aborts the delivery", async () => {
    const eo = createExactlyOnce(redis, { prefix: 'tw', leaseMs: 5000 });
    const worker = new AbortController();
    const defer = async (): Promise<never> => {
      throw new Error('deferred');
    };
    const body = runExactlyOnce(eo, { key: freshKey(), log, labels, defer, signal: worker.signal }, async (run) => {
      worker.abort(new Error('shutting down'));
      run.signal.throwIfAborted();
      return 'not aborted';
    });
    await expect(body).rejects.toThrow('shutting down');
  });

  it('runs its scripts again after Redis forgot them (SCRIPT FLUSH, a restarted server)', async () => {
    const ledger = new IdempotencyLedger(redis, { prefix: 'tw', leaseMs: 5000 });
    const key = freshKey();
    await redis.script('FLUSH');
    const claim = await ledger.claim(key);
    expect(claim.kind).toBe('claimed');
    await redis.script('FLUSH');
    if (claim.kind === 'claimed') expect(await claim.run.complete('ok')).toBe(true);
    expect((await ledger.claim(key)).kind).toBe('done');
  });
});

/**
 * The ledger's batching (LedgerBatcher, through @tickwork/core ScriptBatcher): what a busy worker relies on is
 * that every run gets its own answer and that operations made while a batch is in flight share a script
 * call; what an idle one relies on is that its operation leaves at once.
 */
describe('LedgerBatcher', () => {
  it('sends the first operation of a burst at once, alone, and the rest together in one call, and a burst its replies lead to in one call; each gets its own answer', async () => {
    const ledger = new IdempotencyLedger(redis, { prefix: 'tw', leaseMs: 5000 });
    const keys = Array.from({ length: 10 }, () => freshKey());
    const before = { ...ledger.batcher.sent };
    // Made in one turn: the first leaves at once, the nine made while it is in flight leave in the second.
    const claims = await Promise.all(keys.map((k) => ledger.claim(k, { kind: 'key' }, 'a')));
    expect(claims.map((c) => c.kind)).toEqual(keys.map(() => 'claimed'));
    expect({ batches: ledger.batcher.sent.batches - before.batches, ops: ledger.batcher.sent.ops - before.ops }).toEqual({ batches: 2, ops: 10 });

    // Another owner's burst for the same runs, made as the first's replies arrive: each is told its own run
    // is held, in one call (the lane is busy until the turn that took the reply ends, so these leave together).
    const other = await Promise.all(keys.map((k) => ledger.claim(k, { kind: 'key' }, 'b')));
    expect(other.map((c) => c.kind)).toEqual(keys.map(() => 'busy'));
    expect(ledger.batcher.sent.batches - before.batches).toBe(3);

    // A burst made once the process is idle again: the first at once, the rest together, as at the start.
    await new Promise((resolve) => setImmediate(resolve));
    await Promise.all(keys.map((k) => ledger.claim(k, { kind: 'key' }, 'c')));
    expect(ledger.batcher.sent.batches - before.batches).toBe(5);
  });

  it('sends an operation made while the process is idle at once, alone', async () => {
    const ledger = new IdempotencyLedger(redis, { prefix: 'tw', leaseMs: 5000 });
    const before = ledger.batcher.sent.batches;
    for (let i = 0; i < 3; i++) expect((await ledger.claim(freshKey(), { kind: 'key' }, 'a')).kind).toBe('claimed');
    expect(ledger.batcher.sent.batches - before).toBe(3);
  });
});
