import { createLogger, createRedis, QueueSet, type RedisClient } from '@tickwork/core';
import { startRedisCluster, type RedisClusterHandle } from './redis-cluster.js';

/** A private cluster with a client made as the apps make theirs and a QueueSet over it: what the apps' cluster tests start with. */
export interface ClusterQueues {
  cluster: RedisClusterHandle;
  redis: RedisClient;
  queues: QueueSet;
  /** Resumes any paused node, closes the queues and the client, then stops the cluster. */
  stop(): Promise<void>;
}

export async function startClusterQueues(prefix: string, opts?: Parameters<typeof startRedisCluster>[0]): Promise<ClusterQueues> {
  const cluster = await startRedisCluster(opts);
  const redis = createRedis(cluster.target, 'command');
  const queues = new QueueSet(redis, prefix, createLogger('test', 'silent'));
  return {
    cluster,
    redis,
    queues,
    async stop() {
      for (const node of cluster.nodes) node.resume(); // a test may leave a node paused (SIGSTOP)
      await queues.close();
      redis.disconnect();
      await cluster.stop();
    },
  };
}
