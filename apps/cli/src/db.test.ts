/** `tickwork db migrate` as a real process against a private PostgreSQL. */
import { fileURLToPath } from 'node:url';
import { createLogger } from '@tickwork/core';
import { createPgPool, type Pool } from '@tickwork/exactly-once';
import { freePort, startApp, startPostgresServer, type PostgresServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));
let pg: PostgresServerHandle;
let pool: Pool;

async function tickwork(env: Record<string, string>, ...args: string[]) {
  const app = startApp(CLI, { LOG_LEVEL: 'silent', ...env }, args);
  const code = await app.exited;
  return { code, out: app.lines.join('\n') };
}

const tables = async () =>
  (await pool.query<{ table_name: string }>(
    "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'tickwork_%' ORDER BY table_name",
  )).rows.map((r) => r.table_name);

beforeAll(async () => {
  pg = await startPostgresServer();
  pool = createPgPool(pg.url, createLogger('test', 'silent'));
}, 60_000);
afterAll(async () => {
  await pool?.end();
  await pg?.stop();
});

it('db migrate creates tickwork_steps and tickwork_outbox, and a second run changes nothing', async () => {
  const first = await tickwork({ DATABASE_URL: pg.url }, 'db', 'migrate');
  expect(first).toMatchObject({ code: 0 });
  expect(first.out).toContain('tickwork_steps and tickwork_outbox are in place');
  expect(await tables()).toEqual(['tickwork_outbox', 'tickwork_steps']);
  await pool.query("INSERT INTO tickwork_steps (run_key, step_id, result) VALUES ('r', 's', '1')");

  // --url instead of the env, --json: idempotent, the existing row is kept.
  const second = await tickwork({}, 'db', 'migrate', '--url', pg.url, '--json');
  expect(second.code).toBe(0);
  expect(JSON.parse(second.out)).toEqual({ database: `postgres://***@127.0.0.1:${pg.port}/postgres`, tables: ['tickwork_steps', 'tickwork_outbox'] });
  expect((await pool.query('SELECT count(*)::int AS n FROM tickwork_steps')).rows[0]).toEqual({ n: 1 });
}, 60_000);

it('without a database, or with a URL that is not postgres://, it says what to give: exit 2', async () => {
  const none = await tickwork({}, 'db', 'migrate');
  expect(none.code).toBe(2);
  expect(none.out).toContain('say which database: --url postgres://... or DATABASE_URL');
  const wrong = await tickwork({ DATABASE_URL: 'mysql://root:hunter2@db/app' }, 'db', 'migrate');
  expect(wrong.code).toBe(2);
  expect(wrong.out).toContain('must be a postgres:// or postgresql:// URL');
  expect(wrong.out).not.toContain('hunter2');
  const sub = await tickwork({ DATABASE_URL: pg.url }, 'db', 'upgrade');
  expect(sub.code).toBe(2);
  expect(sub.out).toContain('unknown db command "upgrade"; known: migrate');
}, 30_000);

it('an unreachable database is a clear error, exit 1, and the password is not printed', async () => {
  const port = await freePort();
  const { code, out } = await tickwork({ DATABASE_URL: `postgres://app:s3cret-pw@127.0.0.1:${port}/app` }, 'db', 'migrate');
  expect(code).toBe(1);
  expect(out).toContain(`tickwork db: could not migrate postgres://***:***@127.0.0.1:${port}/app: connect ECONNREFUSED`);
  expect(out).not.toContain('s3cret-pw');
}, 30_000);
