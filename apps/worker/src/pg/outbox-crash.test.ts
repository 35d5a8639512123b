/**
 * Transactional enqueue across a relay crash, with real processes: a relay killed -9 after adding its
 * jobs to BullMQ and before deleting their rows, then the worker's own relay (OUTBOX_DATABASE_URL)
 * taking over. Every committed row must become exactly one job that runs exactly once.
 */
import { fileURLToPath } from 'node:url';
import { createLogger, QueueSet } from '@tickwork/core';
import { enqueueInTransaction, inTransaction, type Pool } from '@tickwork/exactly-once';
import { appEntry, freePort, startApp, waitFor, type AppProcess, type PostgresServerHandle, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { catalog, PG_FX_KEYS, pgNote } from '../testing/pg-fixtures.js';
import { startPgServers, type PgServers } from '../testing/pg-servers.js';

const FIXTURES = fileURLToPath(new URL('../../dist/testing/pg-fixtures.js', import.meta.url));
const RELAY_PROCESS = fileURLToPath(new URL('../../dist/testing/outbox-relay-process.js', import.meta.url));

let servers: PgServers;
let pgServer: PostgresServerHandle;
let redisServer: RedisServerHandle;
let pool: Pool;
let redis: Redis;
let queues: QueueSet;
const apps: AppProcess[] = [];

beforeAll(async () => {
  servers = await startPgServers();
  ({ pg: pgServer, redis: redisServer, pool } = servers);
  redis = redisServer.client();
  queues = new QueueSet(redis, 'tickwork', createLogger('test', 'silent'));
}, 60_000);
afterAll(async () => {
  await Promise.all(apps.map((a) => a.stop('SIGKILL')));
  await queues?.close();
  await servers?.stop();
});

it('a relay killed -9 between adding its jobs and deleting their rows: the next relay re-adds nothing, each job runs once', async () => {
  const written = await inTransaction(pool, async (client) => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await enqueueInTransaction(client, catalog, pgNote, { note: `n${i}` }, { orderingKey: 'o' })).jobId);
    return ids;
  });

  const relay = startApp(RELAY_PROCESS, { REDIS_URL: redisServer.url, FX_DATABASE_URL: pgServer.url });
  apps.push(relay);
  const held = await relay.waitForLog((l) => l.msg === 'jobs added; holding the transaction', 'the relay holding its batch', 30_000);
  expect(held.jobIds).toEqual(written);
  // Added to BullMQ, rows still there (locked by the relay's open transaction).
  expect((await queues.get('pgfx').getJobs(['waiting'])).map((j) => j.id).sort()).toEqual([...written].sort());
  expect((await pool.query('SELECT count(*)::int AS n FROM tickwork_outbox')).rows[0]).toEqual({ n: 5 });
  await relay.stop('SIGKILL');

  // The worker's relay finds the rows (PostgreSQL aborted the dead relay's transaction) and runs the jobs.
  const worker = startApp(appEntry('worker'), {
    REDIS_URL: redisServer.url,
    JOBS_MODULE: FIXTURES,
    FX_DATABASE_URL: pgServer.url,
    // With a password (the private cluster trusts local connections and ignores it): it must not be logged.
    OUTBOX_DATABASE_URL: pgServer.url.replace('postgres@', 'postgres:s3cret-pw@'),
    OUTBOX_RELAY_INTERVAL_MS: '100',
    WORKER_QUEUES: 'pgfx',
    PORT: String(await freePort()),
  });
  apps.push(worker);
  const started = await worker.waitForLog((l) => l.msg === 'outbox relay started', 'outbox relay started', 30_000);
  expect(started.database).toBe(`postgres://***:***@127.0.0.1:${pgServer.port}/postgres`);
  await waitFor(async () => (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM tickwork_outbox')).rows[0]?.n === 0, {
    timeoutMs: 30_000,
    what: 'the outbox emptied by the worker relay',
  });
  await waitFor(async () => (await queues.get('pgfx').getJobCounts('completed')).completed === 5, { timeoutMs: 30_000, what: '5 jobs completed' });

  const notes = await redis.lrange(PG_FX_KEYS.notes, 0, -1);
  expect(notes.sort()).toEqual(written.map((id, i) => `n${i}|${id}`).sort());
  const counts = await queues.get('pgfx').getJobCounts('completed', 'waiting', 'active', 'delayed', 'failed');
  expect(counts).toEqual({ completed: 5, waiting: 0, active: 0, delayed: 0, failed: 0 });
  expect(worker.lines.join('\n')).not.toContain('outbox relay pass failed');
  expect(worker.lines.join('\n')).not.toContain('s3cret-pw');

  // SIGTERM: the relay stops with the worker's drain.
  expect(await worker.stop('SIGTERM')).toBe(0);
}, 120_000);
