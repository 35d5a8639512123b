/**
 * Compaction of done records (compact-lua.ts, compactor.ts) on a private Redis, one server and a cluster:
 * a duplicate is suppressed with the full record, then with the fingerprint, for the whole window, and
 * the key is free once the window has passed. Windows are shortened (seconds); the timing is Redis's.
 */
import { createHash } from 'node:crypto';
import { startTestRedis, TOPOLOGIES, waitFor, type TestRedis } from '@tickwork/testkit';
import { createLogger, defineScript, runScript, type RedisClient } from '@tickwork/core';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FINGERPRINT_LUA } from './compact-lua.js';
import { startLedgerCompactor } from './compactor.js';
import { IdempotencyLedger, type RunRecordPlace } from './ledger.js';
import { duplicatesSuppressed } from './metrics.js';
import { createExactlyOnce, runExactlyOnce } from './run-exactly-once.js';

const silent = createLogger('test', 'silent');
const log = pino({ level: 'silent' });
const labels = { queue: 'q', job: 'compaction' };
const QUEUE = 'q';
const WINDOW_MS = 3000;
const place: RunRecordPlace = { kind: 'key', windowMs: WINDOW_MS, queue: QUEUE };
let n = 0;
const freshKey = () => `c-${++n}-${Math.random().toString(36).slice(2)}`;
const noDefer = async (): Promise<never> => {
  throw new Error('deferred');
};

async function redisNow(redis: RedisClient): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

async function completeRun(ledger: IdempotencyLedger, key: string, result: unknown, at = place): Promise<void> {
  const claim = await ledger.claim(key, at, `owner-${key}`);
  if (claim.kind !== 'claimed') throw new Error(`expected a claim, got ${claim.kind}`);
  expect(await claim.run.complete(result)).toBe(true);
}

/** Compacts until `key`'s full record is gone (its stage is due once its bucket and the full span passed). */
async function compactedAway(ledger: IdempotencyLedger, key: string): Promise<void> {
  const compactor = startLedgerCompactor({ ledger, queues: [QUEUE], log: silent, intervalMs: 3_600_000 });
  try {
    await waitFor(async () => (await compactor.compactOnce(), (await ledger.redis.exists(ledger.keyOf(key, QUEUE))) === 0), { what: 'the record compacted' });
  } finally {
    await compactor.stop();
  }
}

describe.each(TOPOLOGIES)('compaction of done records (%s)', (topology) => {
  let test: TestRedis;
  let redis: RedisClient;
  const ledgerOf = (opts: { fullRecordMs?: number } = {}) => new IdempotencyLedger(redis, { prefix: 'tw', leaseMs: 1000, fullRecordMs: opts.fullRecordMs ?? 200 });

  beforeAll(async () => {
    test = await startTestRedis(topology);
    redis = test.connect('command');
  }, 60_000);
  afterAll(async () => {
    await test?.stop();
  });

  it('suppresses a duplicate with the full record, then with its fingerprint, for the whole window; then the key is free', async () => {
    const ledger = ledgerOf();
    const key = freshKey();
    await completeRun(ledger, key, { charged: 42 });
    const completedAt = (await ledger.inspect(key, place))?.completedAt?.getTime() ?? 0;
    // Within the full span: the duplicate gets the recorded result.
    expect(await ledger.claim(key, place, 'dup-1')).toMatchObject({ kind: 'done', result: { charged: 42 } });

    await compactedAway(ledger, key);
    expect(await ledger.claim(key, place, 'dup-2')).toEqual({ kind: 'done', result: undefined, completedAt: undefined, compacted: true });
    expect(await ledger.inspect(key, place)).toMatchObject({ state: 'done', compacted: true, result: undefined });
    // The refused claim left nothing behind.
    expect(await redis.exists(ledger.keyOf(key, QUEUE))).toBe(0);

    // Suppressed until the window has passed, free at most a twelfth of it later (the slot's end).
    const freedAt = await waitFor(async () => {
      const claim = await ledger.claim(key, place, `late-${Date.now()}`);
      if (claim.kind === 'claimed') return redisNow(redis);
      expect(claim).toMatchObject({ kind: 'done', compacted: true });
      return undefined;
    }, { timeoutMs: WINDOW_MS * 3, intervalMs: 100, what: 'the key to be free' });
    expect(freedAt).toBeGreaterThanOrEqual(completedAt + WINDOW_MS);
    expect(freedAt).toBeLessThan(completedAt + WINDOW_MS + WINDOW_MS / 12 + 1000);
  });

  it('runs the body once: a duplicate of a compacted run completes without running, counted as suppressed', async () => {
    const eo = createExactlyOnce(redis, { prefix: 'tw', leaseMs: 1000, fullRecordMs: 200 });
    const key = freshKey();
    let runs = 0;
    const opts = { key, log, labels, defer: noDefer, place };
    expect(await runExactlyOnce(eo, opts, async () => (runs++, 'first'))).toBe('first');
    await compactedAway(eo.ledger, key);
    const before = (await duplicatesSuppressed.get()).values.find((v) => v.labels.job === labels.job)?.value ?? 0;
    expect(await runExactlyOnce(eo, opts, async () => (runs++, 'again'))).toBeUndefined();
    const after = (await duplicatesSuppressed.get()).values.find((v) => v.labels.job === labels.job)?.value ?? 0;
    expect(runs).toBe(1);
    expect(after - before).toBe(1);
  });

  it('keeps unfinished runs and short windows whole, and compacts only what is done', async () => {
    const ledger = ledgerOf();
    const idle = freshKey();
    const claim = await ledger.claim(idle, place, 'a');
    if (claim.kind !== 'claimed') throw new Error('expected a claim');
    expect(await claim.run.recordStep('one', 1)).toBe(true);
    expect(await claim.run.release()).toBe(true);
    // A window shorter than twice the full span is never staged: its record stays whole for the window.
    const short: RunRecordPlace = { kind: 'key', windowMs: 350, queue: QUEUE };
    const shortKey = freshKey();
    const c = await ledger.claim(shortKey, short, 'b');
    if (c.kind !== 'claimed') throw new Error('expected a claim');
    expect(await c.run.complete('short')).toBe(true);
    expect(await redis.pttl(ledger.keyOf(shortKey, QUEUE))).toBeGreaterThan(0);
    const stages = await redis.zrange(`${ledger.fpRootOf(QUEUE)}:stages`, '0', '-1');
    expect(stages.filter((m) => m.startsWith('350:'))).toEqual([]);
    const done = freshKey();
    await completeRun(ledger, done, 'done');
    await compactedAway(ledger, done);
    expect(await ledger.inspect(idle, place)).toMatchObject({ state: 'idle', steps: { one: 1 } });
  });

  it('keeps every compacted run findable when a slot was sized too small and its sets spill a level deeper, each an intset', async () => {
    const ledger = ledgerOf({ fullRecordMs: 300 });
    const admin = test.client();
    await admin.ping(); // a cluster client knows its masters once it has the slot map
    const masters = 'nodes' in admin ? admin.nodes('master') : [admin];
    const setLimit = (v: number) => Promise.all(masters.map((m) => m.config('SET', 'set-max-intset-entries', String(v))));
    await setLimit(32);
    try {
      // The slots of the next seconds as if sized for a trickle (one set each): the rate rose within them.
      const windowMs = 12_000;
      const at: RunRecordPlace = { kind: 'key', windowMs, queue: QUEUE };
      const root = ledger.fpRootOf(QUEUE);
      const meta = `${root}:${windowMs}:m`;
      const slot = Math.floor((await redisNow(redis)) / (windowMs / 12));
      for (let i = 0; i < 40; i++) await redis.hset(meta, String(slot + i), '8'); // width 1 (* 8), depth 0
      await redis.pexpire(meta, 60_000);
      const keys = Array.from({ length: 300 }, freshKey);
      await Promise.all(keys.map((key) => completeRun(ledger, key, null, at)));
      await compactedAway(ledger, keys[299] as string);
      for (const key of keys) {
        expect(await redis.exists(ledger.keyOf(key, QUEUE))).toBe(0);
        expect(await ledger.claim(key, at, 'dup')).toMatchObject({ kind: 'done', compacted: true });
      }
      // A new key is not taken for a done one.
      expect(await ledger.claim(freshKey(), at, 'new')).toMatchObject({ kind: 'claimed' });
      const runs = Object.values(await redis.hgetall(`${root}:${windowMs}:n`)).reduce((sum, v) => sum + Number(v), 0);
      expect(runs).toBe(300);
      // Some slot went a level deeper (its shape's depth, the number mod 8).
      expect(Object.values(await redis.hgetall(meta)).some((v) => Number(v) % 8 > 0)).toBe(true);
      if (topology === 'standalone') {
        const sets = await redis.keys(`${root}:${windowMs}:*:*:*`);
        expect(sets.length).toBeGreaterThan(8);
        for (const set of sets) expect(await redis.object('ENCODING', set)).toBe('intset');
      }
    } finally {
      await setLimit(512);
    }
  });
});

describe('fingerprint', () => {
  let test: TestRedis;
  beforeAll(async () => {
    test = await startTestRedis('standalone');
  });
  afterAll(async () => {
    await test?.stop();
  });

  it('is 63 bits of the SHA-1 of the record key in decimal, and 32 more as the seed', async () => {
    const script = defineScript(`${FINGERPRINT_LUA}local fp, seed = fingerprint(KEYS[1]) return {fp, string.format('%d', seed)}`);
    const redis = test.connect('command');
    for (const key of ['tw:ledger:a', 'tw:{q}:ledger:billing@2030-01-01', '', 'x'.repeat(300), ...Array.from({ length: 50 }, (_, i) => `k${i}`)]) {
      const sha = createHash('sha1').update(key).digest('hex');
      const fp = (BigInt(`0x${sha.slice(0, 16)}`) & ((1n << 63n) - 1n)).toString();
      const seed = String(parseInt(sha.slice(16, 24), 16));
      expect(await runScript(redis, script, [key], [])).toEqual([fp, seed]);
    }
  });
});
