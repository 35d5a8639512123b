/** pgStep against a private PostgreSQL: the effect and its record commit, roll back and race together. */
import { createLogger } from '@tickwork/core';
import { createPgPool, LeaseLostError, migrateTickworkTables, onStepRecordedFor, pgStep, pruneSteps, type Pool } from '@tickwork/exactly-once';
import { startPostgresServer, waitFor, type PostgresServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';

let pg: PostgresServerHandle;
let pool: Pool;
const run = (key: string, signal = new AbortController().signal) => ({ idempotencyKey: key, signal });
const count = async (sql: string, params: unknown[] = []) => (await pool.query<{ n: number }>(sql, params)).rows[0]?.n;
const orders = (key: string) => count('SELECT count(*)::int AS n FROM orders WHERE run_key = $1', [key]);
const steps = (key: string) => count('SELECT count(*)::int AS n FROM tickwork_steps WHERE run_key = $1', [key]);

beforeAll(async () => {
  pg = await startPostgresServer();
  pool = createPgPool(pg.url, createLogger('test', 'silent'), { max: 10 });
  await migrateTickworkTables(pool);
  await pool.query('CREATE TABLE orders (id bigserial PRIMARY KEY, run_key text NOT NULL, total int NOT NULL)');
}, 60_000);
afterAll(async () => {
  await pool?.end();
  await pg?.stop();
});
beforeEach(async () => {
  await pool.query('TRUNCATE orders, tickwork_steps');
});

it('commits the effect and the record together, and a replay returns the record without running again', async () => {
  const value = await pgStep(run('r1'), pool, 'charge', async (client, s) => {
    const { rows } = await client.query<{ id: string }>('INSERT INTO orders (run_key, total) VALUES ($1, 42) RETURNING id', ['r1']);
    return { orderId: rows[0]?.id, key: s.key };
  });
  expect(value).toEqual({ orderId: '1', key: 'r1/step/charge' });
  expect(await orders('r1')).toBe(1);
  const { rows } = await pool.query('SELECT result FROM tickwork_steps WHERE run_key = $1 AND step_id = $2', ['r1', 'charge']);
  expect(rows).toEqual([{ result: { orderId: '1', key: 'r1/step/charge' } }]);

  const replay = await pgStep(run('r1'), pool, 'charge', async () => {
    throw new Error('a recorded step must not run again');
  });
  expect(replay).toEqual(value);
  expect(await orders('r1')).toBe(1);
});

it("tells the run's progress hook (which restarts a stalled job's count) when it commits a step, not when it replays one", async () => {
  const ctx = run('progress');
  let told = 0;
  onStepRecordedFor(ctx, async () => void told++);
  await pgStep(ctx, pool, 'charge', async (client) => void (await client.query('INSERT INTO orders (run_key, total) VALUES ($1, 1)', ['progress'])));
  expect(told).toBe(1);
  await pgStep(ctx, pool, 'charge', async () => undefined);
  expect(told).toBe(1);
});

it('a throwing step rolls back its effect and records nothing; the retry runs it', async () => {
  await expect(
    pgStep(run('r2'), pool, 'charge', async (client) => {
      await client.query('INSERT INTO orders (run_key, total) VALUES ($1, 1)', ['r2']);
      throw new Error('card declined');
    }),
  ).rejects.toThrow('card declined');
  expect(await orders('r2')).toBe(0);
  expect(await steps('r2')).toBe(0);

  await pgStep(run('r2'), pool, 'charge', async (client) => client.query('INSERT INTO orders (run_key, total) VALUES ($1, 1)', ['r2']).then(() => 'ok'));
  expect(await orders('r2')).toBe(1);
});

it('two deliveries of the same step at once: one runs and commits, the other waits and gets its result', async () => {
  let ran = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const charge = () =>
    pgStep(run('r3'), pool, 'charge', async (client) => {
      ran++;
      await client.query('INSERT INTO orders (run_key, total) VALUES ($1, 7)', ['r3']);
      await gate; // hold the transaction open until the other delivery is waiting on the step's row
      return { by: ran };
    });
  const first = charge();
  await waitFor(async () => ran === 1, { timeoutMs: 5000, what: 'the first delivery inside its step' });
  const second = charge();
  await waitFor(
    async () => (await count("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'")) === 1,
    { timeoutMs: 5000, what: 'the second delivery waiting on the step row' },
  );
  release();
  expect(await Promise.all([first, second])).toEqual([{ by: 1 }, { by: 1 }]);
  expect(ran).toBe(1);
  expect(await orders('r3')).toBe(1);
});

it('when the first delivery rolls back, the waiting one claims the step and runs it', async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let inside = false;
  const failing = pgStep(run('r4'), pool, 'charge', async (client) => {
    inside = true;
    await client.query('INSERT INTO orders (run_key, total) VALUES ($1, 1)', ['r4']);
    await gate;
    throw new Error('crashed mid-step');
  });
  failing.catch(() => undefined);
  await waitFor(async () => inside, { timeoutMs: 5000, what: 'the first delivery inside its step' });
  const second = pgStep(run('r4'), pool, 'charge', async (client) => {
    await client.query('INSERT INTO orders (run_key, total) VALUES ($1, 2)', ['r4']);
    return 'second';
  });
  await waitFor(
    async () => (await count("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'")) === 1,
    { timeoutMs: 5000, what: 'the second delivery waiting on the step row' },
  );
  release();
  await expect(failing).rejects.toThrow('crashed mid-step');
  expect(await second).toBe('second');
  expect((await pool.query('SELECT total FROM orders WHERE run_key = $1', ['r4'])).rows).toEqual([{ total: 2 }]);
});

it('fenced by the lease: not started once ctx.signal is aborted, and rolled back if it aborts during the step', async () => {
  const lost = new AbortController();
  lost.abort(new LeaseLostError('r5', 'test'));
  let ran = false;
  await expect(pgStep(run('r5', lost.signal), pool, 'charge', async () => (ran = true))).rejects.toThrow(LeaseLostError);
  expect(ran).toBe(false);

  const during = new AbortController();
  await expect(
    pgStep(run('r5', during.signal), pool, 'charge', async (client) => {
      await client.query('INSERT INTO orders (run_key, total) VALUES ($1, 1)', ['r5']);
      during.abort(); // the lease is lost while the step runs: nothing may commit
      return 'late';
    }),
  ).rejects.toThrow(LeaseLostError);
  expect(await orders('r5')).toBe(0);
  expect(await steps('r5')).toBe(0);
});

it('undefined and null results replay as themselves; a non-JSON result is refused and rolled back', async () => {
  expect(await pgStep(run('r6'), pool, 'none', async () => undefined)).toBeUndefined();
  expect(await pgStep(run('r6'), pool, 'none', async () => 'ran again')).toBeUndefined();
  expect(await pgStep(run('r6'), pool, 'null', async () => null)).toBeNull();
  expect(await pgStep(run('r6'), pool, 'null', async () => 'ran again')).toBeNull();
  await expect(pgStep(run('r6'), pool, 'fn', async () => () => 1)).rejects.toThrow('not JSON-serialisable');
  await expect(pgStep(run('r6'), pool, '', async () => 1)).rejects.toThrow('the step id must be a non-empty string');
  expect(await steps('r6')).toBe(2);
});

it('pruneSteps deletes rows older than the retention (7 days by default) and keeps newer ones', async () => {
  await pgStep(run('old'), pool, 'a', async () => 1);
  await pgStep(run('new'), pool, 'a', async () => 1);
  await pool.query("UPDATE tickwork_steps SET recorded_at = now() - interval '8 days' WHERE run_key = 'old'");
  expect(await pruneSteps(pool)).toBe(1);
  expect(await steps('old')).toBe(0);
  expect(await steps('new')).toBe(1);
  expect(await pruneSteps(pool, 0)).toBe(1);
});
