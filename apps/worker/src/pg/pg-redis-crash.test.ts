/**
 * pgStep when Redis, not a worker, dies: Redis (AOF, fsync every second, so the last second of its writes is
 * lost) is killed -9 three times while runs charge customers in PostgreSQL steps. Whatever Redis forgets
 * (a run's record, a job's completion), the step records are in PostgreSQL, committed with the charges:
 * no customer is charged twice and none is missed.
 */
import { fileURLToPath } from 'node:url';
import { createRedis, jobOptions } from '@tickwork/core';
import { appEntry, freePort, startApp, waitFor, type AppProcess } from '@tickwork/testkit';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pgBill } from '../testing/pg-fixtures.js';
import { startPgServers, type PgServers } from '../testing/pg-servers.js';

const FIXTURES = fileURLToPath(new URL('../../dist/testing/pg-fixtures.js', import.meta.url));
const RUNS = 6;
const CUSTOMERS = 60;

let servers: PgServers;
const workers: AppProcess[] = [];

beforeAll(async () => {
  servers = await startPgServers({ appendonly: true, appendfsync: 'everysec' });
}, 60_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  await servers?.stop();
});

const charged = async () => Number((await servers.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM fx_charges')).rows[0]?.n ?? 0);

it('Redis killed -9 three times mid-billing (charges in pgSteps): 0 customers charged twice, none missed', async () => {
  const { redis: redisServer, pg, pool } = servers;
  for (let i = 0; i < 2; i++) {
    const app = startApp(appEntry('worker'), {
      REDIS_URL: redisServer.url,
      JOBS_MODULE: FIXTURES,
      FX_DATABASE_URL: pg.url,
      WORKER_QUEUES: 'pgbill',
      PORT: String(await freePort()),
      WORKER_CONCURRENCY: '3',
      WORKER_LOCK_DURATION_MS: '2000',
      WORKER_STALLED_INTERVAL_MS: '1000',
      LOG_LEVEL: 'warn',
    });
    workers.push(app);
  }
  const connection = createRedis(redisServer.url, 'command');
  connection.on('error', () => undefined); // refused while Redis is down: that is the test
  const queue = new Queue('pgbill', { connection, prefix: 'tickwork' });
  queue.on('error', () => undefined);
  for (let r = 0; r < RUNS; r++) {
    await queue.add(pgBill.name, { run: `run-${r}`, customers: CUSTOMERS, maxPauseMs: 100 }, { ...jobOptions(pgBill), jobId: `run-${r}` });
  }
  // Each kill waits for a fixed share of all charges (1/4, 1/2, 3/4), not for "some more since the last kill":
  // between kills the runs may go on charging (a pgStep's record is in PostgreSQL), so a relative wait could
  // find the billing already finished and wait forever.
  const total = RUNS * CUSTOMERS;
  const chargedAtKill: number[] = [];
  for (let k = 1; k <= 3; k++) {
    chargedAtKill.push(await waitFor(async () => {
      const n = await charged();
      return n >= (total * k) / 4 ? n : false;
    }, { timeoutMs: 60_000, intervalMs: 10, what: `${k}/4 of the charges made` }));
    await redisServer.kill();
    await redisServer.restart();
  }
  await waitFor(async () => (await queue.getJobCounts('completed')).completed === RUNS, { timeoutMs: 120_000, what: `all ${RUNS} runs completed` });
  const twice = await pool.query('SELECT run, customer, charged FROM fx_balances WHERE charged <> 1');
  expect(twice.rows).toEqual([]);
  expect(await charged()).toBe(total);
  // every kill came mid-billing (charges read just before it), or the test proved nothing about it
  for (const n of chargedAtKill) expect(n).toBeLessThan(total);
  await queue.close();
  connection.disconnect();
}, 240_000);
