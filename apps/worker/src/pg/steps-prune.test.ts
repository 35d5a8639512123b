/**
 * The worker prunes tickwork_steps on its PostgreSQL pool (OUTBOX_DATABASE_URL): rows older than the
 * unfinished-run retention go, newer ones stay. A real worker process and a private PostgreSQL.
 */
import { fileURLToPath } from 'node:url';
import { appEntry, freePort, startApp, type AppProcess } from '@tickwork/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startPgServers, type PgServers } from '../testing/pg-servers.js';

const FIXTURES = fileURLToPath(new URL('../../dist/testing/pg-fixtures.js', import.meta.url));
let servers: PgServers;
let worker: AppProcess | undefined;

beforeAll(async () => {
  servers = await startPgServers();
}, 60_000);
afterAll(async () => {
  await worker?.stop('SIGKILL');
  await servers?.stop();
});

it('deletes step rows older than IDEMPOTENCY_UNFINISHED_RETENTION_HOURS and keeps newer ones', async () => {
  const { pool } = servers;
  const rows = (hoursAgo: number, run: string) =>
    pool.query(
      `INSERT INTO tickwork_steps (run_key, step_id, recorded_at) SELECT $1, 's' || i, now() - make_interval(hours => $2) FROM generate_series(1, 1500) AS i`,
      [run, hoursAgo],
    );
  await rows(3, 'past-retention');
  await rows(1, 'within-retention');
  worker = startApp(appEntry('worker'), {
    REDIS_URL: servers.redis.url,
    JOBS_MODULE: FIXTURES,
    OUTBOX_DATABASE_URL: servers.pg.url,
    IDEMPOTENCY_UNFINISHED_RETENTION_HOURS: '2',
    WORKER_QUEUES: 'pgfx',
    PORT: String(await freePort()),
  });
  const pruned = await worker.waitForLog((l) => l.msg === 'PostgreSQL step rows past their retention deleted', 'the step rows pruned', 30_000);
  expect(pruned.deleted).toBe(1500);
  const left = await pool.query<{ run_key: string; n: number }>('SELECT run_key, count(*)::int AS n FROM tickwork_steps GROUP BY run_key');
  expect(left.rows).toEqual([{ run_key: 'within-retention', n: 1500 }]);
});
