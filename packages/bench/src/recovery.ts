/**
 * `pnpm bench`, recovery section (issue 13, target 4): what keeping 1,000 running jobs alive costs Redis, and
 * how soon a job whose worker is killed -9 mid-run starts again on another worker, with the defaults.
 *
 * Traffic: three set-ups, each on a private redis-server of its own so Redis's own command counts
 * (INFO commandstats, commands run by scripts included) are each set-up's alone, run side by side in this
 * process over the same window (so the renewal bursts of each fall alike): a BullMQ Worker at concurrency
 * 1,000 running the worker's real processor on 1,000 jobs whose handlers wait, with
 * - today: the 30 s lock and stall check, the ledger lease renewed as the worker does, no heartbeat;
 * - tickwork: the same plus the worker registry's heartbeat and reaper (the defaults: 1 s, dead after 5 s);
 * - shorter lock: the alternative not chosen, a 6 s lock and 3 s stall check (lease 6 s), no heartbeat.
 * Renewals come in bursts: BullMQ extends every lock whose last extension is half its renew time old, on a
 * timer of that half (30 s lock: every 7.5 s); the ledger renews a lease a third of it after the last
 * renewal, on a timer of a sixth (30 s lease: every 15 s). The 30 s window opens 11.25 s after the Worker
 * starts, so four lock bursts and two lease bursts fall inside it, none near its edges.
 *
 * Recovery: two real worker processes (defaults), a job waiting mid-run on one, that one killed -9; the
 * time until the job's handler starts again on the other.
 */
import { createCatalog, createRedis, defineJob, type Enqueue } from '@tickwork/core';
import { createExactlyOnce } from '@tickwork/exactly-once';
import { appEntry, fixtureModule, freePort, startApp, startRedisServer, waitFor, type AppProcess } from '@tickwork/testkit';
import { gated, RC_KEYS, RC_QUEUE } from '@tickwork/testkit/fixtures/recovery-catalog';
import { createEngine } from '@tickwork/bullmq-engine';
import { createProcessor, createRecovery, RunningJobs, type Recovery } from '@tickwork/worker';
import { Queue, Worker } from 'bullmq';
import { pino } from 'pino';
import { z } from 'zod';

const RUNNING = 1000;
const WINDOW_OPENS_MS = 11_250;
const WINDOW_MS = 30_000;
const RECOVERY_GOAL_MS = 10_000;
const PREFIX = 'bench';
const silent = pino({ level: 'silent' });

let releaseAll!: () => void;
const held = new Promise<void>((resolve) => (releaseAll = resolve));
const hold = defineJob({ name: 'bench.hold', queue: 'hold', schema: z.object({ i: z.number() }), handler: async () => held });
const catalog = createCatalog([hold]);
const enqueue: Enqueue = async () => {
  throw new Error('the bench job enqueues nothing');
};

interface SetUp {
  name: string;
  lockMs: number;
  stalledMs: number;
  heartbeat: boolean;
}
const SET_UPS: SetUp[] = [
  { name: 'today (lock 30 s, stall check 30 s)', lockMs: 30_000, stalledMs: 30_000, heartbeat: false },
  { name: 'tickwork (same, + heartbeat 1 s)', lockMs: 30_000, stalledMs: 30_000, heartbeat: true },
  { name: 'shorter lock (6 s, stall check 3 s)', lockMs: 6_000, stalledMs: 3_000, heartbeat: false },
];

interface Traffic {
  lockRenewals: number;
  leaseRenewals: number;
  commands: number;
  registryCommands: number;
}

export async function benchRecovery(): Promise<void> {
  process.stdout.write(`\nrecovery after kill -9 (issue 13, target 4)\n`);
  const runs = await Promise.all(SET_UPS.map((s) => keepAlive(s)));
  releaseAll(); // only once every window is over: the handlers of all three wait on the same promise
  const traffic = runs.map((r) => r.traffic);
  await Promise.all(runs.map((r) => r.finish()));
  const perS = (n: number) => (n / (WINDOW_MS / 1000)).toFixed(1).padStart(6);
  process.stdout.write(
    `keeping ${RUNNING} running jobs alive, ${WINDOW_MS / 1000} s window, Redis commands from INFO commandstats (scripts' own included):\n`,
  );
  SET_UPS.forEach((s, i) => {
    const t = traffic[i] as Traffic;
    process.stdout.write(
      `  ${s.name.padEnd(36)} renewals ${perS(t.lockRenewals + t.leaseRenewals)}/s (locks ${perS(t.lockRenewals)}, leases ${perS(t.leaseRenewals)})` +
        `   Redis commands ${perS(t.commands)}/s${s.heartbeat ? `, of which heartbeat/reaper ${perS(t.registryCommands)}/s (per process, not per job)` : ''}\n`,
    );
  });
  const [today, ours] = traffic as [Traffic, Traffic, Traffic];
  const perJob = (t: Traffic) => (t.commands - t.registryCommands) / (WINDOW_MS / 1000) / RUNNING;
  // The heartbeat is a fixed cost per process; what must not grow is what each running job costs. Both run
  // the same renewal code with the same settings: where in the window a lease renewal falls (jobs start
  // over about a second) moves the count by a few percent either way, hence the 5% margin.
  const met = perJob(ours) <= perJob(today) * 1.05;
  process.stdout.write(
    `no more Redis traffic per running job than today: ${met ? 'MET' : 'NOT MET'} ` +
      `(Redis commands per running job per s, heartbeat aside: ${perJob(ours).toFixed(3)} against today's ${perJob(today).toFixed(3)}, within 5%)\n`,
  );
  const ms = await recoveryTime();
  process.stdout.write(
    `job restarted on another worker ${(ms / 1000).toFixed(1)} s after its worker was killed -9, defaults (target <= ${RECOVERY_GOAL_MS / 1000} s): ${ms <= RECOVERY_GOAL_MS ? 'MET' : 'NOT MET'}\n`,
  );
}

/** Runs `RUNNING` waiting jobs under `s` on a Redis of its own and counts what keeping them alive costs. */
/** The worker's engine, as the worker app makes it (its fast path on a matching BullMQ). */
const engine = createEngine({ log: silent });

async function keepAlive(s: SetUp): Promise<{ traffic: Traffic; finish: () => Promise<void> }> {
  const server = await startRedisServer();
  const command = createRedis(server.url, 'command');
  const ledgerRedis = createRedis(server.url, 'command');
  const blocking = createRedis(server.url, 'blocking');
  const queue = new Queue(hold.queue, { connection: command, prefix: PREFIX });
  let recovery: Recovery | undefined;
  const running = new RunningJobs();
  if (s.heartbeat) {
    recovery = createRecovery({ redisTarget: server.url, prefix: PREFIX, leaseMs: s.lockMs, maxStalledCount: 2, stalls: engine.stalls, isRunning: (q, id) => running.has(q, id), log: silent });
  }
  engine.holdEveryCommand(ledgerRedis);
  engine.holdEveryCommand(command);
  const exactlyOnce = createExactlyOnce(ledgerRedis, { prefix: PREFIX, leaseMs: s.lockMs, ...(recovery && { liveness: recovery.registry }) });
  const ackOf = engine.ackConnectionOf;
  const processor = createProcessor({ catalog, redis: command, enqueue, log: silent, exactlyOnce, running, ...(ackOf && { ackConnectionOf: () => ackOf(worker) }) });
  const startedAt = performance.now();
  const worker: Worker = new Worker(hold.queue, processor, {
    connection: blocking,
    prefix: PREFIX,
    concurrency: RUNNING,
    lockDuration: s.lockMs,
    stalledInterval: s.stalledMs,
    maxStalledCount: 2,
  });
  recovery?.track(worker, hold.queue, blocking);
  recovery?.start();
  let lockRenewals = 0;
  worker.on('locksRenewed', ({ count }: { count: number }) => (lockRenewals += count));
  await queue.addBulk(Array.from({ length: RUNNING }, (_, i) => ({ name: hold.name, data: { i }, opts: { removeOnComplete: true } })));
  await waitFor(async () => (await queue.getActiveCount()) === RUNNING, { timeoutMs: 30_000, what: `${RUNNING} jobs running (${s.name})` });
  // Past the start-up traffic, and between renewal bursts (see the file comment).
  await new Promise((r) => setTimeout(r, Math.max(0, startedAt + WINDOW_OPENS_MS - performance.now())));
  const locks0 = lockRenewals;
  const leases0 = exactlyOnce.ledger.batcher.sent.ops; // no job starts or ends in the window: every ledger call is a renewal
  const registry0 = registryCalls(recovery);
  const stats0 = await commandStats(command);
  await new Promise((r) => setTimeout(r, WINDOW_MS));
  const stats1 = await commandStats(command);
  const traffic: Traffic = {
    lockRenewals: lockRenewals - locks0,
    leaseRenewals: exactlyOnce.ledger.batcher.sent.ops - leases0,
    commands: stats1.total - stats0.total - 1, // less the INFO that read it
    // Each beat is one script running TIME, ZADD, ZREMRANGEBYSCORE and ZRANGEBYSCORE; a check, ZSCORE and TIME.
    registryCommands: registryCalls(recovery) - registry0,
  };
  const finish = async () => {
    await waitFor(async () => (await queue.getActiveCount()) === 0, { timeoutMs: 30_000, what: 'the held jobs to finish' });
    await worker.close();
    await recovery?.stop(true);
    await queue.close();
    for (const c of [command, ledgerRedis, blocking]) c.disconnect();
    await server.stop();
  };
  return { traffic, finish };
}

function registryCalls(recovery: Recovery | undefined): number {
  const sent = recovery?.registry.sent;
  return sent ? sent.beats * 5 + sent.checks * 3 : 0;
}

async function commandStats(redis: ReturnType<typeof createRedis>): Promise<{ total: number }> {
  const info = await redis.info('commandstats');
  let total = 0;
  for (const m of info.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)) total += Number(m[1]);
  return { total };
}

/** Two worker processes with the defaults; the one running the job is killed -9; ms until the job starts again on the other. */
async function recoveryTime(): Promise<number> {
  const server = await startRedisServer();
  const redis = server.client();
  const apps: AppProcess[] = [];
  try {
    for (let i = 0; i < 2; i++) {
      apps.push(
        startApp(appEntry('worker'), {
          REDIS_URL: server.url,
          JOBS_MODULE: fixtureModule('recovery-catalog'),
          WORKER_QUEUES: RC_QUEUE,
          PORT: String(await freePort()),
          LOG_LEVEL: 'warn',
        }),
      );
    }
    // Each process registers itself and its one BullMQ Worker.
    await waitFor(async () => (await redis.zcard('tickwork:meta:workers')) >= 4, { timeoutMs: 30_000, what: 'both workers registered' });
    // A connection of its own, disconnected below: BullMQ does not close a connection it was given, and one
    // left open kept reconnecting to the stopped server for the rest of the bench.
    const producer = createRedis(server.url, 'command');
    const queue = new Queue(RC_QUEUE, { connection: producer, prefix: 'tickwork' });
    await queue.add(gated.name, { gate: 'bench' }, { attempts: 1 });
    const startOf = (n: number, timeoutMs: number) =>
      waitFor(async () => (await redis.lrange(RC_KEYS.starts('bench'), 0, -1))[n - 1], { timeoutMs, what: `delivery ${n} to start` });
    const holder = Number(await startOf(1, 30_000));
    await waitFor(async () => (await redis.llen(RC_KEYS.waiting('bench'))) === 1, { what: 'the run mid-way, its step recorded' });
    const killedAt = performance.now();
    await apps.find((a) => a.proc.pid === holder)?.stop('SIGKILL');
    await startOf(2, 60_000);
    const ms = performance.now() - killedAt;
    await queue.close();
    producer.disconnect();
    return ms;
  } finally {
    await Promise.all(apps.map((a) => a.stop('SIGKILL')));
    redis.disconnect();
    await server.stop();
  }
}
