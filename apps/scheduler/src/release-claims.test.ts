/**
 * The takeover's two halves in one process, against a private redis-server: RELEASE_CLAIMS expires exactly
 * the claims of the replicas named (takeover.ts releaseClaims), and the next claim round takes them over
 * first, planned with supersede (catch-up.ts): the schedule resumes with its next occurrence, those due
 * meanwhile go by the missed policy. The lease is far longer than the test's clock, so only the release explains the takeover.
 */
import { runScript } from '@tickwork/core';
import { CLAIM, readHistory, releaseClaims, shardKeys, shardOf } from '@tickwork/schedules';
import { describe, expect, it } from 'vitest';
import { useRedisPerFile } from './testing/redis-per-file.js';
import { KINDS, scheduleOf } from './testing/store-fixture.js';

const t = useRedisPerFile();
const T0 = Date.parse('2026-05-01T00:00:00Z');

describe.each(KINDS)('%s schedules', (kind) => {
  it("a dead replica's claim is released and taken over by the next round, its superseded occurrences judged by the policy", async () => {
    const s = await scheduleOf(t.redis, kind, { every: { seconds: 1 }, tz: 'UTC' }, T0, { lookaheadMs: 1000, leaseMs: 60_000, graceMs: 60_000 });
    t.queueSets.push(s.queues);
    const k = shardKeys(s.prefix, shardOf(s.id));
    // Replica 'dead0001' claimed second 1 ahead of its time (lease 60 s), then died.
    const claimArgs = [T0 + 200, T0 + 1200, 10, T0 + 60_200, 'dead0001.7'];
    expect(((await runScript(t.redis, CLAIM, [k.due, k.claimed, k.inflight, k.defs], claimArgs)) as unknown[]).slice(0, 3)).toEqual([0, s.id, String(T0 + 1000)]);

    expect(await releaseClaims(t.redis, s.prefix, ['live0002'])).toBe(0); // another replica's claims only
    expect(Number(await t.redis.zscore(k.claimed, s.id))).toBe(T0 + 60_200);
    expect(await releaseClaims(t.redis, s.prefix, ['dead0001'])).toBe(1);
    expect(Number(await t.redis.zscore(k.claimed, s.id))).toBe(0);
    expect(await releaseClaims(t.redis, s.prefix, ['dead0001'])).toBe(0); // twice is harmless

    // 4.3 s after the claim's time, well within its lease: the schedule resumes with second 5 at its time
    // (within the look-ahead); 1..4, due meanwhile, are recorded missed ('skip') rather than added at once.
    const result = await s.dispatcher().tick(T0 + 4300);
    expect(result).toMatchObject({ takenOver: 1, enqueued: 1, missed: 4 });
    const history = await readHistory(t.redis, s.prefix, s.id);
    const outcomes = history.map((h) => `${(Date.parse(h.nominal) - T0) / 1000}:${h.outcome ?? 'enqueued'}`).reverse();
    expect(outcomes).toEqual(['1:missed', '2:missed', '3:missed', '4:missed', '5:enqueued']);
    expect(await t.redis.zcard(k.claimed)).toBe(0);
    expect(await t.redis.hlen(k.inflight)).toBe(0);
  });

  it('a claim taken over after an outage longer than the grace is planned as that outage is from the due index: once catches up one', async () => {
    // Everything down from second 1 to 9.3 (grace 1.5 s, as in the scheduler's process test): whether the
    // last scheduler died holding the claim of second 1 or between claims, the same plan, one catch-up.
    const outage = async (diedHolding: boolean) => {
      const s = await scheduleOf(t.redis, kind, { every: { seconds: 1 }, tz: 'UTC', missed: 'once' }, T0, { leaseMs: 60_000, graceMs: 1500 });
      t.queueSets.push(s.queues);
      if (diedHolding) {
        const k = shardKeys(s.prefix, shardOf(s.id));
        await runScript(t.redis, CLAIM, [k.due, k.claimed, k.inflight, k.defs], [T0 + 1000, T0 + 1000, 10, T0 + 61_000, 'dead0001.7']);
        expect(await releaseClaims(t.redis, s.prefix, ['dead0001'])).toBe(1);
      }
      const result = await s.dispatcher().tick(T0 + 9300);
      expect(result).toMatchObject({ takenOver: diedHolding ? 1 : 0, caughtUp: 1, missed: 6, enqueued: 2 });
      const history = await readHistory(t.redis, s.prefix, s.id);
      return history.map((h) => `${(Date.parse(h.nominal) - T0) / 1000}:${h.trigger}:${h.outcome ?? 'enqueued'}`).reverse();
    };
    const plan = [...[1, 2, 3, 4, 5, 6].map((n) => `${n}:schedule:missed`), '7:catch-up:enqueued', '8:schedule:enqueued', '9:schedule:enqueued'];
    expect(await outage(false)).toEqual(plan);
    expect(await outage(true)).toEqual(plan);
  });
});
