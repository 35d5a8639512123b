import type { QueueSet } from '@tickwork/core';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';

/**
 * One private redis-server for a test file, started before its tests and stopped after them, with the
 * QueueSets the tests made closed first. `t.redis` is valid inside tests (not at module load).
 */
export function useRedisPerFile(): { readonly redis: Redis; readonly queueSets: QueueSet[] } {
  let server: RedisServerHandle | undefined;
  let client: Redis | undefined;
  const queueSets: QueueSet[] = [];
  beforeAll(async () => {
    server = await startRedisServer();
    client = server.client();
  });
  afterAll(async () => {
    await Promise.all(queueSets.map((q) => q.close()));
    await client?.quit();
    await server?.stop();
  });
  return {
    get redis(): Redis {
      if (!client) throw new Error('useRedisPerFile: the redis client exists only inside tests');
      return client;
    },
    queueSets,
  };
}
