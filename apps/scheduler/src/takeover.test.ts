/**
 * A scheduler that dies holding claims: real scheduler and worker processes on a private redis-server. Each
 * scheduler holds the claims of the occurrences due within its look-ahead (1 s) until their time, so one
 * killed -9 always leaves claims behind. The lease is 30 s here, so that only the scheduler registry (beat
 * 1 s, dead after 3 s) can explain a takeover within seconds.
 */
import { claimsHeldBy, occurrenceJobId, readHistory, readOccurrence, schedulersKey, type HeldClaim, type OccurrenceRecord } from '@tickwork/schedules';
import { QueueSet, createLogger } from '@tickwork/core';
import { startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fixtureApps } from './testing/fixture-apps.js';
import { everySecond, runCounts, unsettled } from './testing/takeover-fixture.js';

const SCHEDULES = 30;
const LEASE_MS = 30_000;
/** Heartbeat 1 s + dead-after 3 s + a tick, with room for a busy 2-core machine; far under the lease. */
const TAKEOVER_BOUND_MS = 8_000;
// Every-second schedules: more frequent than the add-ahead window, so their claims are held within the
// look-ahead (what these tests take over) rather than added ahead (add-ahead.test.ts, and the test below).
const env = {
  SCHEDULE_TICK_MS: '250',
  SCHEDULE_LOOKAHEAD_MS: '1000',
  SCHEDULE_LEASE_MS: String(LEASE_MS),
  SCHEDULE_GRACE_MS: '60000',
  SCHEDULER_HEARTBEAT_MS: '1000',
  SCHEDULER_DEAD_AFTER_MS: '3000',
};

let server: RedisServerHandle;
let redis: Redis;
const log = createLogger('test', 'silent');

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
});
afterAll(async () => {
  await server.stop();
});
/** The test's processes: killed after it, also when it fails midway (they would go on retrying a stopped Redis). */
let started: ReturnType<typeof fixtureApps> | undefined;
afterEach(async () => {
  await started?.killAll();
  started = undefined;
});

/** Several node processes starting at once on a shared 2-core machine can take a while. */
const ready = (a: AppProcess) => a.waitForLog((l) => l.msg === 'scheduler ready' || l.msg === 'worker ready', 'ready', 90_000);
const replicaOf = async (a: AppProcess) => String((await ready(a)).replica);

/**
 * Two schedulers and a worker on `prefix`, running `SCHEDULES` every-second schedules. `a` is whichever
 * scheduler holds at least 3 of their claims when it returns, `b` the other: schedules due on the same
 * second are mostly claimed by whichever ticks first after the second, so it is not always the same one.
 */
async function cluster(prefix: string) {
  const apps = (started = fixtureApps(() => server.url, prefix));
  const ids = await everySecond(redis, prefix, prefix, SCHEDULES);
  const schedulers = await Promise.all([apps.start('scheduler', env), apps.start('scheduler', env)]);
  const worker = await apps.start('worker', { ...env, WORKER_CONCURRENCY: '20', WORKER_QUEUES: 'fxt' });
  const [replicas] = await Promise.all([Promise.all(schedulers.map(replicaOf)), ready(worker)]);
  const ran = async () => Object.keys(await runCounts(redis)).filter((k) => k.startsWith(`${prefix}:`)).length;
  await waitFor(async () => (await ran()) >= 2 * SCHEDULES, { timeoutMs: 60_000, intervalMs: 250, what: 'the schedules running' });
  // The claims a replica holds of these schedules (the fixture catalog's own fx.second, whose queue no worker runs here, aside).
  const heldBy = async (replica: string) => (await claimsHeldBy(redis, prefix, replica)).filter((c) => ids.includes(c.id));
  const i = await waitFor(
    async () => {
      const counts = await Promise.all(replicas.map(async (r) => (await heldBy(r)).length));
      const at = counts.findIndex((n) => n >= 3);
      return at >= 0 ? at + 1 : undefined; // 1-based: 0 would read as "not yet"
    },
    { intervalMs: 20, what: 'a scheduler holding claims' },
  );
  const a = schedulers[i - 1] as AppProcess;
  const replicaA = replicas[i - 1] as string;
  const b = schedulers[2 - i] as AppProcess;
  /**
   * Freezes A (SIGSTOP) holding claims. A commits a claim when its occurrence fires, which can happen between
   * the check above and the signal (a loaded machine widens the gap): then A is resumed and frozen again once
   * it holds claims, so the test always has claims to see taken over. Returns what it holds, frozen.
   */
  const freezeA = async (): Promise<HeldClaim[]> => {
    for (let attempt = 1; ; attempt++) {
      a.proc.kill('SIGSTOP');
      const held = await heldBy(replicaA);
      if (held.length > 0 || attempt === 10) return held;
      a.proc.kill('SIGCONT');
      await waitFor(async () => (await heldBy(replicaA)).length > 0, { intervalMs: 20, what: 'the scheduler holding claims again' });
    }
  };
  return { apps, ids, a, b, worker, replicaA, ran, freezeA };
}

/** Waits until the held claims are re-planned by another scheduler; the history records of the held occurrences. */
function takenOver(prefix: string, held: readonly HeldClaim[], timeoutMs: number): Promise<OccurrenceRecord[]> {
  return waitFor(
    async () => {
      const records = await Promise.all(held.map((c) => readOccurrence(redis, prefix, c.id, c.nominal)));
      return records.every((r) => r !== undefined) ? (records as OccurrenceRecord[]) : undefined;
    },
    { timeoutMs, intervalMs: 100, what: 'the dead scheduler\'s claims re-planned by the other' },
  );
}

/** Stops the schedulers cleanly, lets the worker finish what was enqueued, stops it. */
async function drain(prefix: string, schedulers: AppProcess[], worker: AppProcess): Promise<void> {
  for (const s of schedulers) expect(await s.stop('SIGTERM')).toBe(0);
  const queues = new QueueSet(redis, prefix, log);
  await waitFor(async () => (await queues.get('fxt').getJobCountByTypes('wait', 'active', 'delayed', 'prioritized')) === 0, {
    timeoutMs: 60_000,
    what: 'the worker to finish every enqueued occurrence',
  });
  await queues.close();
  expect(await worker.stop('SIGTERM')).toBe(0);
}

describe('a scheduler that dies holding claims', { timeout: 240_000 }, () => {
  it('killed -9: the other takes its schedules over within heartbeat + dead-after + a tick, each occurrence once, no burst', async () => {
    const prefix = 'tk1';
    const { apps, ids, a, b, worker, replicaA, freezeA } = await cluster(prefix);
    // Frozen first, so what it holds is read before it dies, and cannot change before the kill.
    const held = await freezeA();
    await a.stop('SIGKILL');
    const killedAt = Date.now();
    expect(held.length, 'claims the killed scheduler left').toBeGreaterThan(0);

    const records = await takenOver(prefix, held, LEASE_MS);
    const takeoverMs = records.map((r) => Date.parse(r.claimedAt ?? '') - killedAt);
    expect(Math.max(...takeoverMs)).toBeLessThan(TAKEOVER_BOUND_MS);
    // One live scheduler released them, once, naming the dead replica.
    const released = b.logs().filter((l) => l.msg === 'a scheduler stopped beating: its claims are released, and the live schedulers take its schedules over');
    expect(released).toHaveLength(1);
    expect(released[0]).toMatchObject({ replica: replicaA });
    expect(Number(released[0]?.claims)).toBeGreaterThanOrEqual(held.length);

    // No burst: the takeover added one run per schedule (its next occurrence, within the look-ahead); the
    // ones due while no live scheduler held the claim are recorded missed by its policy ('skip').
    for (const c of held) {
      const record = records[held.indexOf(c)] as OccurrenceRecord;
      const plan = (await readHistory(redis, prefix, c.id, 200)).filter((h) => h.claimedAt === record.claimedAt);
      expect(plan.filter((h) => h.outcome !== 'missed').map((h) => h.enqueuedAt !== undefined), `${c.id} at takeover`).toEqual([true]);
      expect(plan.filter((h) => h.outcome === 'missed').length, `${c.id} missed at takeover`).toBeGreaterThan(0);
    }

    // It keeps firing after the takeover, then every occurrence ran once or was recorded not run.
    const next = Math.ceil(Date.now() / 1000) * 1000 + 2000;
    const ranOrSkipped = (r: OccurrenceRecord | undefined) => r?.outcome === 'completed' || r?.outcome === 'skipped-overlap';
    await waitFor(async () => (await Promise.all(held.map((c) => readOccurrence(redis, prefix, c.id, next)))).every(ranOrSkipped), {
      timeoutMs: 30_000,
      intervalMs: 250,
      what: 'the taken-over schedules running on time again',
    });
    await drain(prefix, [b], worker);
    expect(await unsettled(redis, prefix, ids)).toEqual([]);
    expect(await redis.zcard(schedulersKey(prefix))).toBe(0); // B stopped cleanly; A was removed when taken over
    await apps.killAll();
  });

  it('frozen (SIGSTOP) past the dead-after time: judged dead and taken over, and when it resumes nothing runs twice', async () => {
    const prefix = 'tk2';
    const { apps, ids, a, b, worker, replicaA, ran, freezeA } = await cluster(prefix);
    const held = await freezeA();
    expect(held.length).toBeGreaterThan(0);
    // The occurrences A holds in its fire lane, waiting for their time (not those it was adding as it froze).
    const queues = new QueueSet(redis, prefix, log);
    const waiting: HeldClaim[] = [];
    for (const c of held) if (!(await queues.get('fxt').getJob(occurrenceJobId(c.id, new Date(c.nominal))))) waiting.push(c);
    await queues.close();
    await b.waitForLog((l) => l.replica === replicaA && typeof l.claims === 'number', 'B releasing the frozen scheduler\'s claims', 30_000);
    const decided = await takenOver(prefix, waiting, LEASE_MS);
    expect(await redis.zscore(schedulersKey(prefix), replicaA)).toBeNull();

    // A resumes: its held occurrences fire late, find their claims taken over and are left to B (B's verdict
    // stands: those it recorded missed do not run after all); its beat registers it again.
    a.proc.kill('SIGCONT');
    await waitFor(async () => (await redis.zscore(schedulersKey(prefix), replicaA)) !== null, { timeoutMs: 30_000, what: 'A beating again' });
    if (waiting.length > 0) await a.waitForLog((l) => l.msg === 'this scheduler stalled holding occurrences and another took their claims over; it leaves them to that one', 'A leaving its stale occurrences to B');
    const resumedAt = await ran();
    await waitFor(async () => (await ran()) >= resumedAt + 3 * SCHEDULES, { timeoutMs: 60_000, intervalMs: 250, what: 'the schedules firing after the resume' });
    await drain(prefix, [a, b], worker);
    const counts = await runCounts(redis);
    expect(Object.entries(counts).filter(([k, c]) => k.startsWith(`${prefix}:`) && c !== '1')).toEqual([]); // nothing ran twice
    expect(await unsettled(redis, prefix, ids)).toEqual([]);
    // What B recorded missed for the occurrences A held did not run after all.
    const final = await Promise.all(waiting.map((c) => readOccurrence(redis, prefix, c.id, c.nominal)));
    expect(waiting.filter((_, i) => decided[i]?.outcome === 'missed' && final[i]?.outcome !== 'missed').map((c) => c.id)).toEqual([]);
    await apps.killAll();
  });

  it('adding ahead: a scheduler killed -9 leaves its occurrences added ahead to run from the queue, each once, none missed', async () => {
    const prefix = 'tk4';
    const apps = (started = fixtureApps(() => server.url, prefix));
    const ids = await everySecond(redis, prefix, prefix, SCHEDULES);
    // A window of a second (the schedules' interval) beyond a 300 ms look-ahead: each occurrence is added ahead.
    const ahead = { ...env, SCHEDULE_LOOKAHEAD_MS: '300', SCHEDULE_ADD_AHEAD_MS: '1000' };
    const [a, b] = await Promise.all([apps.start('scheduler', ahead), apps.start('scheduler', ahead)]);
    const worker = await apps.start('worker', { ...env, WORKER_CONCURRENCY: '20', WORKER_QUEUES: 'fxt' });
    await Promise.all([a, b, worker].map((p) => ready(p as AppProcess)));
    const ran = async () => Object.keys(await runCounts(redis)).filter((k) => k.startsWith(`${prefix}:`)).length;
    await waitFor(async () => (await ran()) >= 2 * SCHEDULES, { timeoutMs: 60_000, intervalMs: 250, what: 'the schedules running' });
    const queues = new QueueSet(redis, prefix, log);
    const aheadKey = queues.get('fxt').toKey('tickwork-ahead');
    await queues.close();
    await waitFor(async () => (await redis.zcard(aheadKey)) > 0, { intervalMs: 10, what: 'occurrences added ahead, waiting for their lift' });
    await (a as AppProcess).stop('SIGKILL');
    // Every second from the kill for 8 s (what A had added ahead, and what B adds after) runs on schedule.
    const first = Math.ceil(Date.now() / 1000) * 1000;
    const seconds = Array.from({ length: 8 }, (_, k) => first + k * 1000);
    await waitFor(
      async () => {
        const records = await Promise.all(ids.flatMap((id) => seconds.map((t) => readOccurrence(redis, prefix, id, t))));
        return records.every((r) => r?.outcome === 'completed' && r.trigger === 'schedule');
      },
      { timeoutMs: 60_000, intervalMs: 250, what: 'every occurrence after the kill completed on schedule' },
    );
    await drain(prefix, [b as AppProcess], worker);
    const counts = await runCounts(redis);
    expect(Object.entries(counts).filter(([k, c]) => k.startsWith(`${prefix}:`) && c !== '1')).toEqual([]); // nothing ran twice
    expect(await unsettled(redis, prefix, ids)).toEqual([]);
    await apps.killAll();
  });

  it('stopped cleanly: leaves no member in the registry', async () => {
    const apps = (started = fixtureApps(() => server.url, 'tk3'));
    const s = await apps.start('scheduler', env);
    const replica = await replicaOf(s);
    await waitFor(async () => (await redis.zscore(schedulersKey('tk3'), replica)) !== null, { what: 'the scheduler registered' });
    const code = await s.stop('SIGTERM');
    // How it ended, and its last lines if not cleanly: an exit by signal (null code) once failed here under load.
    expect({ code, signal: code === 0 ? null : s.proc.signalCode, log: code === 0 ? [] : s.lines.slice(-15) }).toEqual({ code: 0, signal: null, log: [] });
    expect(await redis.zrange(schedulersKey('tk3'), '0', '-1')).toEqual([]);
    await apps.killAll();
  });
});
