import { describe, expect, it } from 'vitest';
import { createRedis } from './connection.js';
import { RedisUnavailableError, waitForRedis } from './redis-startup.js';

describe('waitForRedis on a cluster that does not answer', () => {
  it('stops with a RedisUnavailableError naming REDIS_CLUSTER_NODES (never the password)', async () => {
    // Port 1: nothing listens there, every connection is refused at once.
    const target = { nodes: [{ host: '127.0.0.1', port: 1 }], url: 'redis://:s3cret@ignored:6379', failoverMs: 30_000 };
    const redis = createRedis(target, 'command');
    redis.on('error', () => undefined);
    try {
      const err = await waitForRedis(redis, target, 500).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(RedisUnavailableError);
      expect((err as Error).message).toMatch(/^cannot reach Redis Cluster at REDIS_CLUSTER_NODES=127\.0\.0\.1:1: tried \d+ time\(s\) in 500 ms .*check REDIS_CLUSTER_NODES/);
      expect((err as Error).message).not.toContain('s3cret');
    } finally {
      redis.disconnect();
    }
  });
});
