import { createLogger, createRedis, QueueSet, type RedisClient } from '@tickwork/runtime';
import { startRedisCluster, type RedisClusterHandle } from './redis-cluster.js';

/** A private cluster with a client made as the apps make theirs and a QueueSet over it: what the apps' cluster tests start with. */
export interface ClusterQueues {
  cluster: RedisClusterHandle;
  redis: RedisClient;
  queues: QueueSet;
  /** Closes the queues and the client, then stops the cluster. */
  stop(): Promise<void>;
}

export async function startClusterQueues(prefix: string): Promise<ClusterQueues> {
  const cluster = await startRedisCluster();
  const redis = createRedis(cluster.target, 'command');
  const queues = new QueueSet(redis, prefix, createLogger('test', 'silent'));
  return {
    cluster,
    redis,
    queues,
    async stop() {
      await queues.close();
      redis.disconnect();
      await cluster.stop();
    },
  };
}
