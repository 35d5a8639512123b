/**
 * Recovery after a crash, with the default settings (WORKER_HEARTBEAT_MS 1 s, WORKER_DEAD_AFTER_MS 5 s,
 * 30 s lock and lease): real worker processes, killed -9 or frozen with SIGSTOP while a run waits in the
 * middle of its handler (after a recorded step, before its effect).
 */
import { createExactlyOnce, type IdempotencyLedger } from '@tickwork/exactly-once';
import { createLogger, jobOptions, QueueSet, workersKey } from '@tickwork/core';
import { listDeadLetters } from '@tickwork/operations';
import { appEntry, fixtureModule, freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { gated, gateFirst, RC_KEYS, RC_QUEUE } from '@tickwork/testkit/fixtures/recovery-catalog';

const FIXTURES = fixtureModule('recovery-catalog');
/** The bound is 10 s; today's 30 s lock and 30 s stall check take 30-60 s, so this deadline tells them apart. */
const RECOVERY_DEADLINE_MS = 15_000;

let server: RedisServerHandle;
let redis: Redis;
let queues: QueueSet;
let ledger: IdempotencyLedger;
let apps: AppProcess[] = [];

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
  queues = new QueueSet(redis, 'tickwork', createLogger('test', 'silent'));
  ledger = createExactlyOnce(redis, { prefix: 'tickwork' }).ledger;
});
afterEach(async () => {
  for (const a of apps) a.proc.kill('SIGCONT');
  await Promise.all(apps.map((a) => a.stop('SIGKILL')));
  apps = [];
});
afterAll(async () => {
  await queues?.close();
  await server?.stop();
});

/** A worker process with the default recovery settings; `env` adds to them or overrides them. */
const startWorker = async (env: Record<string, string> = {}): Promise<AppProcess> => {
  const app = startApp(appEntry('worker'), {
    REDIS_URL: server.url,
    JOBS_MODULE: FIXTURES,
    WORKER_QUEUES: RC_QUEUE,
    PORT: String(await freePort()),
    LOG_LEVEL: 'info',
    ...env,
  });
  apps.push(app);
  await app.waitForLog((l) => l.msg === 'worker ready', 'worker ready');
  return app;
};

const list = (key: string) => redis.lrange(key, 0, -1);
const redisNowMs = async () => {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
};
/** The pid of the process that started delivery `n` (1-based) of the run gated by `gate`. */
const starter = (gate: string, n: number, timeoutMs = 30_000) =>
  waitFor(async () => {
    const pid = (await list(RC_KEYS.starts(gate)))[n - 1];
    return pid ? Number(pid) : undefined;
  }, { timeoutMs, what: `delivery ${n} of ${gate} to start` });
const appOf = (pid: number) => {
  const app = apps.find((a) => a.proc.pid === pid);
  if (!app) throw new Error(`no worker process ${pid}`);
  return app;
};
const enqueue = (gate: string, def: typeof gated | typeof gateFirst = gated): Promise<Job> => queues.get(RC_QUEUE).add(def.name, { gate }, jobOptions(def));
/** Waits for delivery `n` of the run to reach its gate (past its step). */
const atGate = (gate: string, n = 1) => waitFor(async () => (await redis.llen(RC_KEYS.waiting(gate))) >= n, { what: `delivery ${n} of ${gate} at its gate` });
/**
 * Waits for the `prepare` step of `job`'s run to be recorded, not only run: a kill between the step's effect
 * and its record leaves the step to the next delivery. A first delivery that is provably the only one runs
 * its step before claiming the run and writes the step's record with the claim at the end of that event-loop
 * turn (README, "When a run is claimed"), so the run can reach its gate, a plain Redis write, just before.
 * `<job name>#<job id>` is the run key of a job without an idempotency key (runtime, idempotencyKeyOf).
 */
const stepRecorded = (job: Job) =>
  waitFor(async () => (await redis.hexists(ledger.stepsKeyOf(`${job.name}#${job.id}`), 'prepare')) === 1, { what: `the prepare step of job ${job.id} recorded` });

/** Two workers, and a run of `def` for `gate` enqueued and waiting at its gate: its job, the process holding it, the other one. */
async function runAtGate(gate: string, def: typeof gated | typeof gateFirst = gated) {
  const [w1, w2] = await Promise.all([startWorker(), startWorker()]);
  const job = await enqueue(gate, def);
  const holder = appOf(await starter(gate, 1));
  await atGate(gate);
  if (def === gated) await stepRecorded(job);
  return { job, holder, other: holder === w1 ? w2 : w1 };
}

it('a worker killed -9 mid-run: another worker resumes the run within seconds, its recorded step not redone, the effect once', async () => {
  const { job, holder, other: survivor } = await runAtGate('kill');
  const holderPid = holder.proc.pid;

  const killedAt = Date.now();
  await holder.stop('SIGKILL');
  const resumedBy = await starter('kill', 2, RECOVERY_DEADLINE_MS);
  const recoveryMs = Date.now() - killedAt;
  console.log(`recovery after kill -9: the run started again on the surviving worker ${recoveryMs} ms after the kill`);
  expect(resumedBy).toBe(survivor.proc.pid);
  expect(recoveryMs).toBeLessThan(RECOVERY_DEADLINE_MS);

  await redis.set(RC_KEYS.gate('kill'), '1');
  await waitFor(async () => (await job.getState()) === 'completed', { what: 'the resumed run completed' });
  expect(await list(RC_KEYS.prepared('kill'))).toEqual([String(holderPid)]);
  expect(await list(RC_KEYS.effects('kill'))).toEqual([String(survivor.proc.pid)]);
  expect(survivor.logs().find((l) => l.msg === 'took back a job whose worker stopped beating')).toMatchObject({ jobId: job.id, stalledCount: 1 });
  expect(survivor.logs().find((l) => l.msg === 'took over a run whose holder stopped renewing its lease')).toMatchObject({ holderDead: true, recordedSteps: 1 });
}, 90_000);

it('a worker started after the holder was killed takes the run over from its first beat, without waiting out the dead-after time itself', async () => {
  // Dead after 20 s (heartbeat 1 s) for every process here, so that "at once" and "after its own
  // dead-after time" are 20 s apart. The keeper is another worker process, of another catalog and queue:
  // it keeps the registry beaten, as the rest of a cluster does, and cannot take the run back itself.
  const slow = { WORKER_DEAD_AFTER_MS: '20000' };
  const keeper = await startWorker({ ...slow, JOBS_MODULE: fixtureModule('fast-catalog'), WORKER_QUEUES: 'fixture' });
  const holder = await startWorker(slow);
  const job = await enqueue('late');
  expect(await starter('late', 1)).toBe(holder.proc.pid);
  await atGate('late');
  await stepRecorded(job);
  const holderTag = String((await holder.waitForLog((l) => l.msg === 'workers started', 'holder started')).processTag);

  await holder.stop('SIGKILL');
  await waitFor(async () => (await redisNowMs()) - Number(await redis.zscore(workersKey('tickwork'), `p:${holderTag}`)) > 20_000, {
    timeoutMs: 60_000,
    what: 'the holder silent for the dead-after time',
  });
  const late = await startWorker(slow);
  const lateTag = String((await late.waitForLog((l) => l.msg === 'workers started', 'late worker started')).processTag);
  const registeredAt = Number(await waitFor(() => redis.zscore(workersKey('tickwork'), `p:${lateTag}`), { what: 'the late worker registered' }));

  expect(await starter('late', 2, 60_000)).toBe(late.proc.pid);
  const tookBack = await late.waitForLog((l) => l.msg === 'took back a job whose worker stopped beating', 'the late worker taking the job back');
  expect(tookBack).toMatchObject({ jobId: job.id, stalledCount: 1 });
  // Waited for, not read at once: the handler can start before its run's claim is logged (a claim rides
  // with the run's first effect where the delivery is sole), and on a busy machine the line comes later.
  const tookOver = await late.waitForLog((l) => l.msg === 'took over a run whose holder stopped renewing its lease', 'the late worker taking the run over');
  expect(tookOver).toMatchObject({ holderDead: true, recordedSteps: 1 });
  expect(late.logs().filter((l) => l.msg === 'run held by another delivery; deferred')).toEqual([]);
  // Judging from its own first beat on, not after 20 s of its own beats (half of that is room for a busy machine).
  expect(Date.parse(String(tookBack.time)) - registeredAt).toBeLessThan(10_000);

  await redis.set(RC_KEYS.gate('late'), '1');
  await waitFor(async () => (await job.getState()) === 'completed', { what: 'the resumed run completed' });
  expect(await list(RC_KEYS.effects('late'))).toEqual([String(late.proc.pid)]);
  expect(keeper.logs().filter((l) => l.msg === 'took back a job whose worker stopped beating')).toEqual([]);
}, 150_000);

it('a worker frozen (SIGSTOP) past the dead-after time, then resumed: its run is taken over, its late writes refused, the effect once', async () => {
  const { job, holder: frozen, other } = await runAtGate('freeze');
  const frozenPid = frozen.proc.pid;

  frozen.proc.kill('SIGSTOP');
  expect(await starter('freeze', 2, RECOVERY_DEADLINE_MS)).toBe(other.proc.pid);
  // The gate opens while the first process is still frozen: when it wakes, its run goes on to the effect
  // at once, as a handler would that was merely slow. The ledger refuses its step (the run is the other
  // delivery's now), and BullMQ refuses its attempt's end (the lock is the other worker's).
  await redis.set(RC_KEYS.gate('freeze'), '1');
  frozen.proc.kill('SIGCONT');
  await waitFor(async () => (await job.getState()) === 'completed', { what: 'the taken-over run completed' });
  // BullMQ's refusal reads "Lock mismatch" while the other worker still holds the job's lock, "Missing lock"
  // once that worker has completed it and the lock is gone: which one depends on who gets there first.
  await frozen.waitForLog((l) => /(Lock mismatch|Missing lock) for job/.test(JSON.stringify(l)), 'the frozen worker\'s attempt to be refused', 30_000);

  expect(await list(RC_KEYS.effects('freeze'))).toEqual([String(other.proc.pid)]);
  expect(await list(RC_KEYS.prepared('freeze'))).toEqual([String(frozenPid)]);
  expect((await queues.get(RC_QUEUE).getJob(job.id as string))?.returnvalue).toEqual({ pid: other.proc.pid });
  expect(frozen.proc.exitCode).toBeNull();
}, 90_000);

it('a worker frozen past the dead-after time before its first step: awake and beating again, it claims before the step, finds the run taken over, and does not run it', async () => {
  const { job, holder: frozen, other } = await runAtGate('first', gateFirst);

  frozen.proc.kill('SIGSTOP');
  expect(await starter('first', 2, RECOVERY_DEADLINE_MS)).toBe(other.proc.pid);
  await atGate('first', 2);
  // The first delivery is young (its lock's first half has not passed) and its process beats again once it
  // wakes: only the gap in its beats says that another worker may have taken its job meanwhile. The gate
  // opens once both live processes have beaten since the wake (the registry also still lists, silent, the
  // processes earlier tests killed).
  frozen.proc.kill('SIGCONT');
  const [woke] = await redis.time();
  await waitFor(async () => {
    const flat = (await redis.zrange(workersKey('tickwork'), 0, '-1', 'WITHSCORES')) as unknown as string[];
    const beatSinceWake = flat.filter((score, i) => i % 2 === 1 && String(flat[i - 1]).startsWith('p:') && Number(score) >= Number(woke) * 1000);
    return beatSinceWake.length >= 2;
  }, { what: 'both processes beating after the wake' });
  await redis.set(RC_KEYS.gate('first'), '1');
  await waitFor(async () => (await job.getState()) === 'completed', { what: 'the taken-over run completed' });

  expect(await list(RC_KEYS.effects('first'))).toEqual([String(other.proc.pid)]);
  expect((await queues.get(RC_QUEUE).getJob(job.id as string))?.returnvalue).toEqual({ pid: other.proc.pid });
  expect(frozen.logs().filter((l) => /ran (steps )?before|beside another delivery/.test(String(l.msg)))).toEqual([]);
}, 90_000);

it('a run whose worker is killed -9 more than WORKER_MAX_STALLED_COUNT (2) times ends in the DLQ, saying so', async () => {
  await Promise.all([startWorker(), startWorker()]);
  const job = await enqueue('loop');
  // Each kill is a stall; the run makes no new progress after the first delivery (its step is replayed).
  for (let kill = 1; kill <= 3; kill++) {
    const holder = appOf(await starter('loop', kill));
    await atGate('loop', kill);
    // Else the second delivery would redo and record the step: progress, which starts the stall count again.
    if (kill === 1) await stepRecorded(job);
    await holder.stop('SIGKILL');
    apps = apps.filter((a) => a !== holder);
    await startWorker(); // always two alive
  }
  const dead = await waitFor(async () => (await listDeadLetters(queues, RC_QUEUE)).find((d) => d.entry.originalJobId === job.id), {
    // Generous: after the last kill, the dead worker is noticed (5 s), then the take-back fails the run; a
    // loaded CI machine once took longer than 30 s for it (the diagnostics below say what state it was in).
    timeoutMs: 60_000,
    what: 'the job in the DLQ',
  }).catch(async (err: Error) => {
    // Where the run went instead, so a failure here says why.
    const state = await job.getState();
    const fresh = await queues.get(RC_QUEUE).getJob(job.id as string);
    const said = apps.flatMap((a) => a.lines.slice(-8));
    throw new Error(`${err.message}: job ${state}, stalledCounter ${fresh?.stalledCounter}, starts ${await redis.llen(RC_KEYS.starts('loop'))}, failedReason ${fresh?.failedReason}; workers said:\n${said.join('\n')}`);
  });
  expect(dead.entry.failureReason).toMatch(/^job stalled more than allowable limit: its worker stopped mid-run more than WORKER_MAX_STALLED_COUNT \(2\) times$/);
  // Three deliveries ran; the fourth failed the job before running it.
  expect(await redis.llen(RC_KEYS.starts('loop'))).toBe(3);
  expect(await redis.llen(RC_KEYS.effects('loop'))).toBe(0);
}, 150_000);
