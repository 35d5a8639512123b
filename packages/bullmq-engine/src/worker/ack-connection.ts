import type { RedisClient } from '@tickwork/core';
import type { Worker } from 'bullmq';

/**
 * The connection `worker` acknowledges jobs on (moveToFinished). BullMQ hands out its ioredis instance
 * behind a thin proxy that passes commands through to it, so commands sent there share its order.
 */
export function ackConnectionOf(worker: Worker | undefined): Promise<RedisClient> | undefined {
  return worker?.getBackend().client as Promise<unknown> as Promise<RedisClient> | undefined;
}
