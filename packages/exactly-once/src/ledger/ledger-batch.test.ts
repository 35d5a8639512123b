/**
 * The ledger's batching (LedgerBatcher, through @tickwork/core ScriptBatcher) on a real redis-server: what a
 * busy worker relies on is that every run gets its own answer, that operations made while batches are in
 * flight share a script call, and that an idle worker's operation leaves at once.
 */
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { IdempotencyLedger } from './ledger.js';

let server: RedisServerHandle;
let redis: Redis;

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
});
afterAll(async () => {
  await server.stop();
});

it('sends the first operation of a burst at once, alone, and the rest together in one call; each gets its own answer', async () => {
  const ledger = new IdempotencyLedger(redis, { prefix: 'tw', leaseMs: 5000 });
  const keys = Array.from({ length: 10 }, (_, i) => `burst-${i}`);
  const before = { ...ledger.batcher.sent };
  // Made in one turn: the first leaves at once, the nine made while it is in flight leave in the second.
  const claims = await Promise.all(keys.map((k) => ledger.claim(k, { kind: 'key' }, 'a')));
  expect(claims.map((c) => c.kind)).toEqual(keys.map(() => 'claimed'));
  expect({ batches: ledger.batcher.sent.batches - before.batches, ops: ledger.batcher.sent.ops - before.ops }).toEqual({ batches: 2, ops: 10 });

  // Another owner's burst for the same runs: each is told its own run is held, in two calls again.
  const other = await Promise.all(keys.map((k) => ledger.claim(k, { kind: 'key' }, 'b')));
  expect(other.map((c) => c.kind)).toEqual(keys.map(() => 'busy'));
  expect(ledger.batcher.sent.batches - before.batches).toBe(4);
});

it('sends an operation made while the process is idle at once, alone', async () => {
  const ledger = new IdempotencyLedger(redis, { prefix: 'tw', leaseMs: 5000 });
  const before = ledger.batcher.sent.batches;
  for (let i = 0; i < 3; i++) expect((await ledger.claim(`quiet-${i}`, { kind: 'key' }, 'a')).kind).toBe('claimed');
  expect(ledger.batcher.sent.batches - before).toBe(3);
});
