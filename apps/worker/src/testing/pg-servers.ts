import { createLogger } from '@tickwork/core';
import { createPgPool, migrateTickworkTables, type Pool } from '@tickwork/exactly-once';
import { startPostgresServer, startRedisServer, type PostgresServerHandle, type RedisServerHandle } from '@tickwork/testkit';
import { PG_FX_SCHEMA } from './pg-fixtures.js';

export interface PgServers {
  pg: PostgresServerHandle;
  redis: RedisServerHandle;
  /** A pool on `pg` whose database has tickwork's tables and the fixture jobs' tables. */
  pool: Pool;
  stop(): Promise<void>;
}

/** A private PostgreSQL (migrated) and a private Redis, started side by side, for the PostgreSQL tests. */
export async function startPgServers(redisOpts: Parameters<typeof startRedisServer>[0] = {}): Promise<PgServers> {
  const [pg, redis] = await Promise.all([startPostgresServer(), startRedisServer(redisOpts)]);
  const pool = createPgPool(pg.url, createLogger('test', 'silent'), { max: 10 });
  await migrateTickworkTables(pool);
  await pool.query(PG_FX_SCHEMA);
  return {
    pg,
    redis,
    pool,
    async stop() {
      await pool.end();
      await Promise.all([pg.stop(), redis.stop()]);
    },
  };
}
