import type { BatchStore, Engine, UnreadableJob } from '@tickwork/bullmq-engine';
import { createRedis, EVENTS_MAX_LEN, keyspaceOn, type AnyJob, type Logger, type RedisOutageLog, type RedisTarget } from '@tickwork/core';

export interface OpenBatchStoreOptions {
  /** The worker's engine: its store is tickwork's batch scripts (fast) or BullMQ's public API only (public). */
  engine: Engine;
  redisTarget: RedisTarget;
  prefix: string;
  queue: string;
  def: AnyJob;
  leaseMs: number;
  maxStalledCount: number;
  /** BullMQ's stalled check interval for the public store (default: the lease). */
  stalledIntervalMs?: number;
  log: Logger;
  outage?: RedisOutageLog;
  /** Jobs the store failed for good because they cannot be read (the public store), to dead-letter. */
  onUnreadable?: (jobs: readonly UnreadableJob[]) => void;
}

/**
 * The batch store of batch job `def`'s queue, with connections of its own (a command one and a blocking one,
 * both closed with the store): the fast one, or on the engine's public paths the public one.
 */
export function openBatchStore(o: OpenBatchStoreOptions): BatchStore {
  const command = createRedis(o.redisTarget, 'command');
  const blocking = createRedis(o.redisTarget, 'blocking');
  for (const c of [command, blocking]) {
    if (o.outage) o.outage.watch(c);
    else c.on('error', (err) => o.log.warn({ err: { message: err.message }, queue: o.queue }, 'batch redis connection error'));
  }
  const base = {
    redis: command,
    blocking,
    keyspace: keyspaceOn(command, o.prefix, o.queue),
    queue: o.queue,
    def: o.def,
    maxEvents: EVENTS_MAX_LEN,
    leaseMs: o.leaseMs,
    maxStalledCount: o.maxStalledCount,
    log: o.log,
    ...(o.onUnreadable && { onUnreadable: o.onUnreadable }),
  };
  return o.engine.createBatchStore({ ...base, ...(o.stalledIntervalMs !== undefined && { stalledIntervalMs: o.stalledIntervalMs }) });
}
