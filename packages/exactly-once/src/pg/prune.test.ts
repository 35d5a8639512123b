/** Pruning tickwork_steps on a private PostgreSQL: old rows go in batches, on a timer; new and locked rows stay. */
import { createLogger } from '@tickwork/core';
import { startPostgresServer, waitFor, type PostgresServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { createPgPool, inTransaction, type Pool } from './pool.js';
import { pruneSteps, startStepPruner } from './prune.js';
import { migrateTickworkTables } from './schema.js';

const DAY = 24 * 3600_000;
let pg: PostgresServerHandle;
let pool: Pool;
const count = async (where: string) => (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM tickwork_steps WHERE ${where}`)).rows[0]?.n;

/** `n` rows of run `run`, recorded `ageMs` ago. */
const insert = (run: string, n: number, ageMs: number) =>
  pool.query(
    `INSERT INTO tickwork_steps (run_key, step_id, result, recorded_at)
     SELECT $1, 's' || i, '1'::jsonb, now() - make_interval(secs => $3::double precision / 1000) FROM generate_series(1, $2) AS i`,
    [run, n, ageMs],
  );

beforeAll(async () => {
  pg = await startPostgresServer();
  pool = createPgPool(pg.url, createLogger('test', 'silent'), { max: 4 });
  await migrateTickworkTables(pool);
}, 60_000);
afterAll(async () => {
  await pool?.end();
  await pg?.stop();
});
beforeEach(async () => {
  await pool.query('TRUNCATE tickwork_steps');
});

it('deletes every row past the retention, a batch per statement, and keeps the newer ones', async () => {
  await insert('old', 2500, 8 * DAY);
  await insert('new', 10, 6 * DAY);
  expect(await pruneSteps(pool, 7 * DAY, 1000)).toBe(2500);
  expect(await count("run_key = 'old'")).toBe(0);
  expect(await count("run_key = 'new'")).toBe(10);
});

it('skips a row whose step is being committed (its lock held) instead of waiting, and takes it at a later pass', async () => {
  await insert('old', 3, 8 * DAY);
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const tx = inTransaction(pool, async (client) => {
    await client.query("SELECT 1 FROM tickwork_steps WHERE run_key = 'old' AND step_id = 's1' FOR UPDATE");
    locked();
    await held;
  });
  await isLocked;
  expect(await pruneSteps(pool, 7 * DAY)).toBe(2);
  release();
  await tx;
  expect(await pruneSteps(pool, 7 * DAY)).toBe(1);
});

it('prunes on a timer until stopped', async () => {
  const pruner = startStepPruner({ pool, log: createLogger('test', 'silent'), olderThanMs: 7 * DAY, intervalMs: 50, batchSize: 100 });
  try {
    await insert('old', 250, 8 * DAY);
    await insert('new', 5, 1000);
    await waitFor(async () => (await count("run_key = 'old'")) === 0, { what: 'the old rows pruned' });
    expect(await count("run_key = 'new'")).toBe(5);
  } finally {
    await pruner.stop();
  }
});
