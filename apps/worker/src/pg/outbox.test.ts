/**
 * Transactional enqueue: rows written in the caller's transaction, relayed to BullMQ by startOutboxRelay,
 * against a private PostgreSQL and a private Redis (in-process relays; the crash test is outbox-crash.test.ts).
 */
import { createLogger, QueueSet, type Logger } from '@tickwork/core';
import { createPgPool, enqueueInTransaction, inTransaction, relayOutboxOnce, startOutboxRelay, type OutboxRelay, type Pool } from '@tickwork/exactly-once';
import { waitFor, type PostgresServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { captureLogger } from '../testing/capture-logger.js';
import { catalog, pgNote } from '../testing/pg-fixtures.js';
import { startPgServers, type PgServers } from '../testing/pg-servers.js';

let servers: PgServers;
let pgServer: PostgresServerHandle;
let pool: Pool;
let redis: Redis;
let queues: QueueSet;
const relays: OutboxRelay[] = [];
const silent = createLogger('test', 'silent');

const pending = async () =>
  (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM tickwork_outbox WHERE failed_at IS NULL')).rows[0]?.n ?? 0;
const queued = () => queues.get('pgfx').getJobs(['waiting'], 0, -1, true);
/** One relay pass, driven by the test. */
const relayPass = (log: Logger = silent, p = pool, batchSize?: number) => relayOutboxOnce({ pool: p, queues, catalog, log, ...(batchSize && { batchSize }) });

beforeAll(async () => {
  servers = await startPgServers();
  ({ pg: pgServer, pool } = servers);
  await pool.query('CREATE TABLE orders (id bigserial PRIMARY KEY, customer text NOT NULL)');
  redis = servers.redis.client();
  queues = new QueueSet(redis, 'tickwork', silent);
}, 60_000);
afterAll(async () => {
  await queues?.close();
  await servers?.stop();
});
beforeEach(async () => {
  await pool.query('TRUNCATE orders, tickwork_outbox');
  await redis.flushall();
});
afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.stop()));
});

it('a rolled-back transaction enqueues nothing; a committed one enqueues its job once', async () => {
  await expect(
    inTransaction(pool, async (client) => {
      await client.query("INSERT INTO orders (customer) VALUES ('ada')");
      await enqueueInTransaction(client, catalog, pgNote, { note: 'order confirmed: ada' });
      throw new Error('payment failed');
    }),
  ).rejects.toThrow('payment failed');
  const { outboxId, jobId } = await inTransaction(pool, async (client) => {
    await client.query("INSERT INTO orders (customer) VALUES ('bob')");
    return enqueueInTransaction(client, catalog, pgNote, { note: 'order confirmed: bob' });
  });
  expect(jobId).toBe(`outbox-${outboxId}`);

  // The relay as the worker runs it: polling on its own.
  const relay = startOutboxRelay({ pool, queues, catalog, log: silent, intervalMs: 50 });
  relays.push(relay);
  await waitFor(async () => (await pending()) === 0, { timeoutMs: 10_000, what: 'the outbox relayed' });
  await relay.stop();
  expect(await relayPass()).toEqual({ taken: 0, relayed: 0, setAside: 0 });
  const jobs = await queued();
  expect(jobs.map((j) => [j.id, j.name, j.data])).toEqual([[jobId, 'pgfx.note', { note: 'order confirmed: bob' }]]);
  expect(jobs[0]?.opts.attempts).toBe(3); // the job's own BullMQ options, as enqueue gives it
});

it('validates like enqueue: a bad payload, an over-size one or a bad job id throws and writes nothing', async () => {
  const attempt = (data: unknown, opts = {}) =>
    inTransaction(pool, (client) => enqueueInTransaction(client, catalog, pgNote, data as { note: string }, opts));
  await expect(attempt({ note: 5 })).rejects.toThrow('invalid payload for job "pgfx.note": note:');
  await expect(attempt({ note: 'x'.repeat(100) }, { maxPayloadBytes: 50 })).rejects.toThrow('over the 50-byte limit');
  await expect(attempt({ note: 'x' }, { jobId: '42' })).rejects.toThrow('invalid job option enqueue options: jobId: must not be an integer');
  await expect(attempt({ note: 'x' }, { delayMs: -1 })).rejects.toThrow('delayMs');
  expect((await pool.query('SELECT count(*)::int AS n FROM tickwork_outbox')).rows[0]).toEqual({ n: 0 });
});

it('a row that can never be enqueued is set aside with its reason and does not block the rows behind it', async () => {
  const capture = captureLogger();
  await pool.query(`INSERT INTO tickwork_outbox (job_name, queue, payload, opts, ordering_key) VALUES
    ('pgfx.retired', 'pgfx', '{}', '{}', 'k'),
    ('pgfx.note', 'pgfx', '{"text": "old producer"}', '{}', 'k'),
    ('pgfx.note', 'pgfx', '{"note": "x"}', '{"priority": 1.5}', 'k')`);
  await pool.query(`INSERT INTO tickwork_outbox (job_name, queue, payload, job_id, ordering_key) VALUES
    ('pgfx.note', 'pgfx', '{"note": "good"}', 'order-7', 'k')`);
  await relayPass(capture.log);

  expect((await queued()).map((j) => [j.id, j.data])).toEqual([['order-7', { note: 'good' }]]);
  const aside = await pool.query<{ job_name: string; failed_reason: string }>(
    'SELECT job_name, failed_reason FROM tickwork_outbox WHERE failed_at IS NOT NULL ORDER BY id',
  );
  expect(aside.rows.map((r) => r.failed_reason)).toEqual([
    expect.stringContaining('unknown job "pgfx.retired"'),
    expect.stringContaining('invalid payload for job "pgfx.note": note:'),
    expect.stringContaining('invalid job option enqueue options: priority:'),
  ]);
  expect(capture.entries().filter((l) => l.msg === 'outbox row set aside: it can never be enqueued')).toHaveLength(3);
  // Set aside, not relayed again on the next pass.
  expect(await relayPass()).toEqual({ taken: 0, relayed: 0, setAside: 0 });
});

it('two relays at once relay each row once, and each ordering key in row order', async () => {
  const KEYS = ['a', 'b', 'c', 'd'];
  await inTransaction(pool, async (client) => {
    for (let i = 0; i < 300; i++) {
      await enqueueInTransaction(client, catalog, pgNote, { note: String(i) }, i % 5 === 4 ? {} : { orderingKey: KEYS[i % 4] });
    }
  });
  const second = createPgPool(pgServer.url, silent);
  const drive = async (p: Pool) => {
    let relayed = 0;
    while ((await pending()) > 0) relayed += (await relayPass(silent, p, 20)).relayed;
    return relayed;
  };
  const [one, two] = await Promise.all([drive(pool), drive(second)]);
  await second.end();

  expect(one + two).toBe(300);
  expect(one).toBeGreaterThan(0);
  expect(two).toBeGreaterThan(0);
  const jobs = await queued(); // oldest first: the order the relays added them
  expect(new Set(jobs.map((j) => j.id)).size).toBe(300);
  for (const key of KEYS) {
    const order = jobs.map((j) => Number((j.data as { note: string }).note)).filter((n) => n % 5 !== 4 && KEYS[n % 4] === key);
    expect(order).toEqual([...order].sort((x, y) => x - y));
    expect(order.length).toBeGreaterThan(50);
  }
}, 60_000);
