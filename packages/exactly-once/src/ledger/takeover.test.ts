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
import { LIVE_SINCE_MEMBER, WorkerRegistry, type DeadWorker } from '@tickwork/core';
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
/**
 * For the registry's rule itself: a pause of the test process longer than half the dead-after time reads as
 * an outage of the whole registry (every registry here beats from this one process), so these leave room.
 */
const judging = { ...timing, heartbeatMs: 200, deadAfterMs: 3000 };

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

it('judges from its first beat: a registry started after a process fell silent finds it dead at once', async () => {
  const start = async () => {
    const r = new WorkerRegistry(redis, { ...judging, prefix: 'tw-late' });
    registries.push(r);
    await r.start();
    return r;
  };
  const a = await start();
  const keeper = await start(); // the registry stays beaten meanwhile, as in a cluster of several processes
  await a.stop(false);
  await waitFor(() => keeper.isDead(`${a.tag}.x`), { what: 'a silent for the dead-after time' });
  const late = await start();
  // Its first beat is all it needs: the others' beats say the registry is live, and a's silence is a's own.
  expect(await late.isDead(`${a.tag}.x`)).toBe(true);
  expect(await late.isDead(`${keeper.tag}.x`)).toBe(false);
  // Owners without a tag (made without a registry) and this process's own owners are never judged dead.
  expect(await late.isDead('untagged')).toBe(false);
  expect(await late.isDead(`${late.tag}.x`)).toBe(false);
});

it('after the whole registry fell silent (an outage), judges nobody dead until it has been beaten again for the dead-after time', async () => {
  const outage = { ...judging, prefix: 'tw-outage' };
  const start = async (workerId: string, onDead?: (dead: DeadWorker[]) => void) => {
    const r = new WorkerRegistry(redis, outage);
    registries.push(r);
    r.track(workerId, 'q');
    await r.start(onDead);
    return { registry: r, eo: createExactlyOnce(redis, { prefix: 'tw-outage', leaseMs: 60_000, liveness: r }) };
  };
  const a = await start('wa');
  const b = await start('wb');
  let reachedGate!: () => void;
  const atGate = new Promise<void>((resolve) => (reachedGate = resolve));
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const held = runExactlyOnce(a.eo, { key: 'run-o', log, labels, defer }, async (run) => {
    await run.step('prepare', async () => 'a');
    reachedGate();
    await gate;
    return run.step('effect', async () => 'a');
  });
  await atGate;
  await Promise.all([a.registry.stop(false), b.registry.stop(false)]); // everyone silent, as when Redis or the network is down
  const lastBeat = Number((await redis.zrange(a.registry.key, '-1', '-1', 'WITHSCORES'))[1]);
  await waitFor(async () => (await redisNow()) - lastBeat > 2 * outage.deadAfterMs, { what: 'twice the dead-after time of silence' });

  const found: string[] = [];
  const back = await start('wback', (dead) => found.push(...dead.map((d) => d.member)));
  const liveSince = Number(await redis.zscore(back.registry.key, LIVE_SINCE_MEMBER));
  expect(liveSince).toBeGreaterThan(lastBeat + 2 * outage.deadAfterMs); // marked live from its first beat back
  // Each check, bracketed by the Redis clock: one that ended within the hold finds a alive (its delivery is
  // deferred until the hold ends, not for the lease's 5 s), one that began after it finds a dead.
  const deferrals: number[] = [];
  const attempt = () =>
    runExactlyOnce(back.eo, { key: 'run-o', log, labels, defer: async (ms) => (deferrals.push(ms), defer(ms)) }, async (run) => {
      await run.step('prepare', async (): Promise<string> => Promise.reject(new Error('prepare must not run again')));
      return run.step('effect', async () => 'back');
    }).catch((err: Error) => (err.message.startsWith('deferred') ? undefined : Promise.reject(err)));
  const seen: { t0: number; t1: number; dead: boolean; outcome: unknown; deferred: number }[] = [];
  const result = await waitFor(
    async () => {
      const t0 = await redisNow();
      const dead = await back.registry.isDead(`${a.registry.tag}.x`);
      const outcome = await attempt();
      seen.push({ t0, t1: await redisNow(), dead, outcome, deferred: deferrals.length });
      return outcome;
    },
    { what: 'a judged dead and its run taken over after the hold' },
  );
  const hold = outage.deadAfterMs;
  expect(seen.filter((c) => c.t1 - liveSince < hold && (c.dead || c.outcome !== undefined))).toEqual([]);
  expect(seen.filter((c) => c.t0 - liveSince >= hold && !c.dead)).toEqual([]);
  // The first delivery came within the hold on any but a badly stalled machine: it was deferred, not run.
  if ((seen[0]?.t1 ?? Infinity) - liveSince < hold) expect(seen[0]?.deferred).toBe(1);
  expect(result).toBe('back');
  expect(deferrals.every((ms) => ms <= outage.deadAfterMs + 100)).toBe(true);
  await waitFor(() => found.includes('w:wa:q') && found.includes('w:wb:q'), { what: "a's and b's Workers found dead by a beat" });
  // The registry's mark goes once the hold is over.
  await waitFor(async () => (await redis.zscore(back.registry.key, LIVE_SINCE_MEMBER)) === null, { what: 'the mark removed' });
  open();
  await expect(held).rejects.toThrow(LeaseLostError);
});

const redisNow = async () => {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
};
