import { createRedis, WorkerRegistry, type Logger, type RedisClient, type RedisOutageLog, type RedisTarget } from '@tickwork/core';
import type { StallBook } from '@tickwork/bullmq-engine';
import type { Worker } from 'bullmq';
import { watchLostDeliveries, type LostDeliveryCheck } from './lost-deliveries.js';
import { createReaper } from './reaper.js';

/** Defaults of WORKER_HEARTBEAT_MS and WORKER_DEAD_AFTER_MS (env.ts, README "Recovery after a crash"). */
export const DEFAULT_HEARTBEAT_MS = 1000;
export const DEFAULT_DEAD_AFTER_MS = 5000;

export interface RecoveryOptions {
  /** Where Redis is (REDIS_URL or the cluster), for the connections this opens. */
  redisTarget: RedisTarget;
  prefix: string;
  heartbeatMs?: number | undefined;
  deadAfterMs?: number | undefined;
  /** The ledger lease: a dead process is remembered at least this long past its death (see WorkerRegistry). */
  leaseMs: number;
  maxStalledCount: number;
  /**
   * BullMQ's stall bookkeeping (the engine's, on its fast path): with it this process takes back a dead
   * process's jobs within seconds (reaper.ts) and jobs whose delivery was lost (lost-deliveries.ts); without
   * it (BullMQ's public paths) both are left to BullMQ's own stalled check, after the lock expires.
   */
  stalls: StallBook | undefined;
  /** Whether this process is running a job (running-jobs.ts), for the lost-delivery check. */
  isRunning: (queue: string, jobId: string) => boolean;
  log: Logger;
  outage?: RedisOutageLog | undefined;
}

/** The worker process's side of the registry: its heartbeat and its reaper (see worker-registry.ts, reaper.ts). */
export interface Recovery {
  registry: WorkerRegistry;
  /**
   * Registers a BullMQ Worker: its jobs are taken back if this process dies, it takes back dead Workers' jobs
   * of its queue, and jobs delivered to it whose delivery was lost when `connection` failed (lost-deliveries.ts).
   */
  track(worker: Worker, queue: string, connection: RedisClient): void;
  start(): void;
  /**
   * Whether no one can have taken back a job delivered to `queue`'s Worker at `deliveredAt` (Date.now();
   * sole-delivery.ts): every other process has counted this one alive all along since, and that Worker's
   * connection had no trouble lately.
   */
  certain(queue: string, deliveredAt: number): boolean;
  /** `deregister`: a clean stop (see WorkerRegistry.stop). */
  stop(deregister: boolean): Promise<void>;
}

export function createRecovery(opts: RecoveryOptions): Recovery {
  // A connection of its own: a handler's slow or blocking command on the shared connection must never delay
  // a beat (a late beat looks like a death), and the ledger's claims never wait behind the reaper.
  const redis = createRedis(opts.redisTarget, 'command');
  if (opts.outage) opts.outage.watch(redis);
  else redis.on('error', (err) => opts.log.warn({ err: { message: err.message } }, 'registry redis connection error'));
  const deadAfterMs = opts.deadAfterMs ?? DEFAULT_DEAD_AFTER_MS;
  const registry = new WorkerRegistry(redis, {
    prefix: opts.prefix,
    heartbeatMs: opts.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
    deadAfterMs,
    // Past the lease every run of the dead process is free anyway; until then a claim may still ask.
    forgetAfterMs: opts.leaseMs + deadAfterMs,
    log: opts.log,
    outage: opts.outage,
    // The scheduled pipeline's onTime stage holds an early occurrence until its time (pipeline/stages/scheduled.ts).
    holdsEarlyOccurrences: true,
    // It runs occurrences delivered in batches (pipeline/occurrence-batch.ts).
    carriesBatches: true,
  });
  const byQueue = new Map<string, Worker>();
  const lost = new Map<string, LostDeliveryCheck>();
  const stalls = opts.stalls;
  const reap = stalls && createReaper({
    stalls,
    redis,
    prefix: opts.prefix,
    registryKey: registry.key,
    workerOf: (queue) => byQueue.get(queue),
    maxStalledCount: opts.maxStalledCount,
    log: opts.log,
  });
  return {
    registry,
    track(worker, queue, connection) {
      byQueue.set(queue, worker);
      registry.track(worker.id, queue);
      if (!stalls) return;
      lost.set(
        queue,
        watchLostDeliveries({
          redis,
          worker,
          queue,
          connection,
          activeLockedBy: stalls.activeLockedBy,
          isRunning: (jobId) => opts.isRunning(queue, jobId),
          everyMs: opts.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
          windowMs: opts.leaseMs,
          log: opts.log,
        }),
      );
    },
    start() {
      void registry.start(reap);
    },
    certain(queue, deliveredAt) {
      return registry.aliveThroughout(deliveredAt) && lost.get(queue)?.armed() === false;
    },
    async stop(deregister) {
      for (const check of lost.values()) check.stop();
      lost.clear();
      await registry.stop(deregister);
      redis.disconnect();
    },
  };
}
