/**
 * A Redis that restarts having lost writes it acknowledged (AOF with `appendfsync everysec` loses up to
 * about 2 s of them): Redis steps' effects went with their records, and the runs still going on in the
 * worker must redo those steps. The loss is made deterministic here rather than left to fsync timing: Redis
 * runs without AOF, a SAVE snapshots it while every run waits at a gate, the runs then record more steps,
 * and Redis is killed -9 and restarted from that older snapshot, so the steps recorded after it are gone
 * though Redis acknowledged them.
 */
import { fileURLToPath } from 'node:url';
import { createLogger, createRedis, QueueSet } from '@tickwork/core';
import { freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import { afterEach, expect, it } from 'vitest';
import { readMetric } from './testing/read-metric.js';
import { gatedChargesKey, TX_GATE } from './testing/tx-fixtures.js';

const WORKER = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const FIXTURES = fileURLToPath(new URL('../dist/testing/tx-fixtures.js', import.meta.url));

const RUNS = Array.from({ length: 4 }, (_, i) => `restart-${i}`);
/** A run whose job is delayed when the snapshot is taken and promoted after it: Redis loses its whole delivery. */
const LATE = 'restart-late';
const ALL = [...RUNS, LATE];
const CUSTOMERS = 10;
/** Every run waits after 5 charges (the snapshot is taken there) and after 8 (Redis is killed there). */
const SNAPSHOT_AT = 5;
const KILLED_AT = 8;

let server: RedisServerHandle | undefined;
let worker: AppProcess | undefined;

afterEach(async () => {
  await worker?.stop('SIGKILL');
  await server?.stop();
  worker = server = undefined;
});

it.each([
  ['the fast path', 'auto'],
  ["BullMQ's public paths", 'off'],
])('Redis restarted from a snapshot older than writes it acknowledged: the runs in progress redo the lost steps, each customer charged once, no attempt spent (%s)', async (_, fastPath) => {
  server = await startRedisServer({ appendonly: false });
  const redisServer = server;
  const port = await freePort();
  worker = startApp(WORKER, { REDIS_URL: redisServer.url, JOBS_MODULE: FIXTURES, PORT: String(port), LOG_LEVEL: 'info', WORKER_CONCURRENCY: String(ALL.length), WORKER_BULLMQ_FAST_PATH: fastPath });
  const app = worker;
  await app.waitForLog((l) => l.msg === 'worker ready', 'the worker ready', 45_000);

  // maxRetriesPerRequest null: the probe's commands wait through the restart instead of failing.
  const probe = redisServer.client();
  const connection = createRedis(redisServer.url, 'command');
  connection.on('error', () => undefined); // refused while Redis is down: that is the test
  const queues = new QueueSet(connection, 'tickwork', createLogger('test', 'silent'));
  try {
    // One attempt each: a run that spent its attempt on the restart would fail for good.
    const add = (run: string, delay?: number) =>
      queues.get('tx').add('tx.gated', { run, customers: CUSTOMERS, pauseAfter: [SNAPSHOT_AT, KILLED_AT] }, { attempts: 1, ...(delay !== undefined && { delay }) });
    const jobs = await Promise.all(RUNS.map((run) => add(run)));
    const late = await add(LATE, 3_600_000);
    const charged = (runs: string[]) => Promise.all(runs.map((run) => probe.hlen(gatedChargesKey(run))));
    const allCharged = (runs: string[], n: number) =>
      waitFor(async () => (await charged(runs)).every((c) => c === n), { timeoutMs: 60_000, what: `every run of ${runs.join(',')} charging ${n} customers` });

    await allCharged(RUNS, SNAPSHOT_AT);
    // The snapshot Redis will come back from: 5 charges per run, recorded with their steps, and the late job delayed.
    expect(await probe.save()).toBe('OK');
    await probe.set(TX_GATE, '1');
    await late.promote();
    await allCharged(ALL, KILLED_AT);

    // Charges 6 to 8 (all 8 of the late run's) were acknowledged with their step records; the restart loses them.
    await redisServer.kill();
    await redisServer.restart();
    expect(await charged(ALL)).toEqual([...RUNS.map(() => SNAPSHOT_AT), 0]);
    // Its promotion was lost too: the late job is delayed again, so it is promoted again.
    expect(await late.getState()).toBe('delayed');
    await probe.set(TX_GATE, '99');
    await late.promote();
    jobs.push(late);

    const states = await waitFor(async () => {
      const s = await Promise.all(jobs.map((j) => j.getState()));
      return s.every((state) => state === 'completed' || state === 'failed') ? s : undefined;
    }, { timeoutMs: 60_000, intervalMs: 100, what: 'every run finished' });
    // Each customer charged once: the lost charges redone, none of the surviving ones again.
    expect(await Promise.all(ALL.map(async (run) => ({ run, charges: await probe.hgetall(gatedChargesKey(run)) })))).toEqual(
      ALL.map((run) => ({ run, charges: Object.fromEntries(Array.from({ length: CUSTOMERS }, (_, i) => [`c${i}`, '1'])) })),
    );
    expect(states).toEqual(ALL.map(() => 'completed'));

    // Said once, with the runs handed back, and counted.
    const said = app.logs().filter((l) => typeof l.msg === 'string' && l.msg.startsWith('Redis restarted'));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({ level: 40, runs: ALL.length });
    expect(await readMetric(port, 'tickwork_worker_redis_restarts_total')).toBe(1);
  } catch (err) {
    // The worker's side of a failure: what it logged around the restart.
    console.error(app.lines.slice(-80).join('\n'));
    throw err;
  } finally {
    await queues.close();
    connection.disconnect();
  }
}, 180_000);
