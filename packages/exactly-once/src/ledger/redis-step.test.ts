import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import { createSteps } from './steps.js';
import { IdempotencyLedger, type RunRecordPlace } from './ledger.js';
import { LeaseLostError } from './errors.js';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let server: RedisServerHandle;
let redis: Redis;
let n = 0;
const fresh = () => `tx-${++n}-${Math.random().toString(36).slice(2)}`;
const signal = () => new AbortController().signal;

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
});
afterAll(async () => server.stop());

const claimed = async (ledger: IdempotencyLedger, key: string, place: RunRecordPlace, owner: string) => {
  const c = await ledger.claim(key, place, owner);
  if (c.kind !== 'claimed') throw new Error(`expected a claim, got ${c.kind}`);
  return c;
};

// Both places a run's record can live: the step's writes are fenced by it either way.
const PLACES: { name: string; place: () => Promise<RunRecordPlace> }[] = [
  { name: 'its own key', place: async () => ({ kind: 'key' }) },
  {
    name: "the job's hash",
    place: async () => {
      const jobKey = `tw:q:${fresh()}`;
      await redis.hset(jobKey, 'name', 'j'); // stands in for the BullMQ job the record lives in
      return { kind: 'job', jobKey };
    },
  },
];

describe.each(PLACES)('ctx.redisStep (record in $name)', ({ place: placeOf }) => {
  it('commits the writes with the step record; a retry gets the recorded result and writes nothing again', async () => {
    const ledger = new IdempotencyLedger(redis, { prefix: 'tw', leaseMs: 60_000 });
    const key = fresh();
    const place = await placeOf();
    let calls = 0;
    const attempt = async (owner: string) => {
      const c = await claimed(ledger, key, place, owner);
      const { redisStep } = createSteps(c.run, signal);
      const value = await redisStep('charge', (tx, s) => {
        calls++;
        tx.hincrby(`charges:${key}`, 'cus_1', 100).rpush(`outbox:${key}`, s.key);
        return { charged: 100 };
      });
      await c.run.release();
      return value;
    };
    expect(await attempt('a')).toEqual({ charged: 100 });
    expect(await attempt('b')).toEqual({ charged: 100 });
    expect(calls).toBe(1);
    expect(await redis.hget(`charges:${key}`, 'cus_1')).toBe('100');
    expect(await redis.lrange(`outbox:${key}`, 0, -1)).toEqual([`${key}/step/charge`]);
  });

  it('the same step script arriving twice (sent again after a failover cut its reply) writes once', async () => {
    const ledger = new IdempotencyLedger(redis, { prefix: 'tw', leaseMs: 60_000 });
    const key = fresh();
    const c = await claimed(ledger, key, await placeOf(), 'a');
    // What a client resending the call does: the same script, same delivery, same step, twice.
    expect(await c.run.recordTxStep('charge', { charged: 100 }, [['hincrby', `charges:${key}`, 'cus_1', 100]])).toBe(true);
    expect(await c.run.recordTxStep('charge', { charged: 100 }, [['hincrby', `charges:${key}`, 'cus_1', 100]])).toBe(true);
    expect(await redis.hget(`charges:${key}`, 'cus_1')).toBe('100');
  });

  it('writes nothing when the step function throws', async () => {
    const ledger = new IdempotencyLedger(redis, { prefix: 'tw', leaseMs: 60_000 });
    const key = fresh();
    const c = await claimed(ledger, key, await placeOf(), 'a');
    const { redisStep } = createSteps(c.run, signal);
    await expect(
      redisStep('charge', (tx) => {
        tx.incrby(`balance:${key}`, 5);
        throw new Error('card declined');
      }),
    ).rejects.toThrow('card declined');
    expect(await redis.exists(`balance:${key}`)).toBe(0);
    expect(c.run.recordedStep('charge')).toBeUndefined();
  });

  it('a delivery whose run was taken over commits nothing: its writes never happen', async () => {
    const ledger = new IdempotencyLedger(redis, { prefix: 'tw', leaseMs: 150 });
    const key = fresh();
    const place = await placeOf();
    const paused = await claimed(ledger, key, place, 'paused');
    const { redisStep } = createSteps(paused.run, signal);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const late = redisStep('charge', async (tx) => {
      tx.incrby(`balance:${key}`, 5);
      await gate; // the holder is paused past its lease here, mid-step
      return 'paused';
    });
    // The lease lapses while the first holder is paused, and another delivery takes the run over.
    const taken = await (async () => {
      for (;;) {
        const c = await ledger.claim(key, place, 'new');
        if (c.kind === 'claimed') return c;
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    expect(taken.tookOver).toBe(true);
    release();
    await expect(late).rejects.toThrow(LeaseLostError);
    expect(await redis.exists(`balance:${key}`)).toBe(0);
    const value = await createSteps(taken.run, signal).redisStep('charge', (tx) => (tx.incrby(`balance:${key}`, 5), 'new'));
    expect(value).toBe('new');
    expect(await redis.get(`balance:${key}`)).toBe('5');
  });
});
