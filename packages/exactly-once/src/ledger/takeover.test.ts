/**
 * Ledger takeover through the worker registry, in one process: two "processes" (each its own registry,
 * i.e. its own tag and heartbeat) run the same run; the first one stops beating (as a frozen or dead
 * process does) while its run waits, the second takes the run over at once instead of waiting out the lease,
 * and the first one's late step and completion are refused.
 */
import { createExactlyOnce, runExactlyOnce } from './run-exactly-once.js';
import type { ExactlyOnce } from './run-types.js';
import { IdempotencyLedger } from './ledger.js';
import { LeaseLostError } from './errors.js';
import { WorkerRegistry } from '@tickwork/core';
import { startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';

let server: RedisServerHandle;
let redis: Redis;
const log = pino({ level: 'silent' });
const labels = { queue: 'q', job: 'j' };
/** Short so the test is quick; the lease (60 s) is far longer, so only the registry can explain a takeover. */
const timing = { prefix: 'tw', heartbeatMs: 50, deadAfterMs: 400, forgetAfterMs: 60_400, log };
const registries: WorkerRegistry[] = [];

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
});
afterAll(async () => {
  await Promise.all(registries.map((r) => r.stop(true)));
  await server.stop();
});

const processWithRegistry = async (): Promise<{ registry: WorkerRegistry; eo: ExactlyOnce }> => {
  const registry = new WorkerRegistry(redis, timing);
  registries.push(registry);
  await registry.start();
  return { registry, eo: createExactlyOnce(redis, { prefix: 'tw', leaseMs: 60_000, liveness: registry }) };
};
const defer = async (ms: number): Promise<never> => {
  throw new Error(`deferred ${ms} ms`);
};

it('takes over the run of a process that stopped beating, and refuses that process\'s late step', async () => {
  const a = await processWithRegistry();
  const b = await processWithRegistry();
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let reachedGate!: () => void;
  const atGate = new Promise<void>((resolve) => (reachedGate = resolve));
  const effects: string[] = [];

  const first = runExactlyOnce(a.eo, { key: 'run-1', log, labels, defer }, async (run) => {
    await run.step('prepare', async () => 'a');
    reachedGate();
    await gate;
    return run.redisStep('effect', (tx) => (tx.rpush('tw:effects', 'a'), effects.push('a'), 'a'));
  });
  await atGate;

  // A live holder is not taken over: the second delivery is deferred as before.
  await waitFor(() => b.registry.seesContinuously(), { what: 'b to see continuously' });
  await expect(runExactlyOnce(b.eo, { key: 'run-1', log, labels, defer }, async () => 'b')).rejects.toThrow(/deferred/);

  await a.registry.stop(false); // a falls silent, as if frozen or killed
  const preparedSeenByB: string[] = [];
  const second = await waitFor(
    async () =>
      runExactlyOnce(b.eo, { key: 'run-1', log, labels, defer }, async (run) => {
        preparedSeenByB.push(await run.step('prepare', async (): Promise<string> => Promise.reject(new Error('prepare must not run again'))));
        return run.redisStep('effect', (tx) => (tx.rpush('tw:effects', 'b'), effects.push('b'), 'b'));
      }).catch((err: Error) => (err.message.startsWith('deferred') ? undefined : Promise.reject(err))),
    { timeoutMs: 10_000, what: 'b to take the run over' },
  );
  expect(second).toBe('b');
  expect(preparedSeenByB).toEqual(['a']); // resumed with a's recorded step, not run again

  open(); // a wakes up and goes on to its effect
  await expect(first).rejects.toThrow(LeaseLostError);
  expect(await redis.lrange('tw:effects', 0, -1)).toEqual(['b']);
  expect(effects).toEqual(['b', 'a']); // a's body ran, but its Redis writes were refused with its step
  const entry = await new IdempotencyLedger(redis, { prefix: 'tw' }).inspect('run-1');
  expect(entry).toMatchObject({ state: 'done', result: 'b', claims: 2 });
  expect(entry?.owner?.startsWith(`${b.registry.tag}.`)).toBe(true);
});

it('does not judge others dead until it has itself beaten without a gap for the dead-after time', async () => {
  const a = await processWithRegistry();
  await a.registry.stop(false);
  const late = new WorkerRegistry(redis, timing);
  registries.push(late);
  await late.start();
  // a has been silent long enough, but `late` has only just started seeing: it may have been cut off itself.
  await waitFor(async () => (await redis.zscore(late.key, `p:${a.registry.tag}`)) !== null, { what: 'a registered' });
  expect(await late.isDead(`${a.registry.tag}.x`)).toBe(false);
  await waitFor(() => late.seesContinuously(), { what: 'late to see continuously' });
  await waitFor(() => late.isDead(`${a.registry.tag}.x`), { what: 'a judged dead' });
  // Owners without a tag (made without a registry) and this process's own owners are never judged dead.
  expect(await late.isDead('untagged')).toBe(false);
  expect(await late.isDead(`${late.tag}.x`)).toBe(false);
});
