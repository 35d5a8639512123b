import { createRequire } from 'node:module';
import type { Pool, PoolClient } from 'pg';

export type { Pool, PoolClient } from 'pg';
import type { Logger } from '@tickwork/core';
import { safeUrl } from '@tickwork/core';

/**
 * pg, loaded when the first pool is made: every app imports the runtime, few use PostgreSQL, and loading pg
 * costs 50-80 ms at each process start (importing pg alone: about 80 ms; a worker starts in about 0.9 s).
 */
let pg: typeof import('pg') | undefined;
const loadPg = (): typeof import('pg') => (pg ??= createRequire(import.meta.url)('pg') as typeof import('pg'));

/**
 * A pool for tickwork's own use (the worker's outbox relay, the CLI's migration). An idle client whose
 * connection drops is reported on the pool's 'error' event, which would end the process unheard:
 * it is logged instead, by message and code only (pg-pool hangs the client, with its connection
 * parameters and so the password, on the error object).
 */
export function createPgPool(url: string, log: Logger, opts: { max?: number } = {}): Pool {
  // A connection timeout: pg waits forever by default, and an unreachable host would hang a CLI or a pass.
  const pool = new (loadPg().Pool)({ connectionString: url, max: opts.max ?? 5, connectionTimeoutMillis: 10_000 });
  pool.on('error', (err: Error & { code?: string }) =>
    log.warn({ database: safeUrl(url), code: err.code, reason: err.message }, 'idle PostgreSQL connection lost'),
  );
  return pool;
}

/**
 * Runs `fn` in a transaction on one client of `pool`: BEGIN, fn, COMMIT; ROLLBACK if anything throws.
 * A client whose connection failed is destroyed instead of being returned to the pool. While it is
 * checked out pg-pool does not listen for the client's 'error' event (a dropped connection), so this
 * does: the pending query rejects with the error anyway.
 */
export async function inTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (err: Error) => {
    broken = err;
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const value = await fn(client);
    await client.query('COMMIT');
    return value;
  } catch (err) {
    await client.query('ROLLBACK').catch((rollbackErr: Error) => {
      broken ??= rollbackErr;
    });
    throw err;
  } finally {
    client.off('error', onError);
    client.release(broken ?? false);
  }
}

/** SQLSTATE of a PostgreSQL error (`23505` unique violation...), if it is one. */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}
