import { Redis, type RedisOptions } from 'ioredis';

/**
 * Connection roles follow BullMQ's production guide:
 * - `blocking` (Workers, QueueEvents): `maxRetriesPerRequest: null`, so a Redis restart never makes a
 *   worker give up on its blocking commands; it reconnects and resumes.
 * - `command` (Queues, producers, the ledger): `maxRetriesPerRequest: 3` (the default 20 would hang an
 *   HTTP request for long), so a caller sees an outage within a few reconnect attempts. The offline queue
 *   stays on (`enableOfflineQueue: true`): commands sent while reconnecting wait and go out in order once
 *   the connection is back, which the ledger relies on (a result written ahead of BullMQ's acknowledgement
 *   must reach Redis before it; see ledger-batch.ts).
 */
export type ConnectionRole = 'blocking' | 'command';

export function redisOptions(role: ConnectionRole): RedisOptions {
  return role === 'blocking'
    ? { maxRetriesPerRequest: null, enableReadyCheck: true, retryStrategy: backoff }
    : { maxRetriesPerRequest: 3, enableOfflineQueue: true, retryStrategy: backoff };
}

export function createRedis(url: string, role: ConnectionRole): Redis {
  return new Redis(url, redisOptions(role));
}

/** Reconnect quickly at first, then at most every 2 s, forever: a worker should outlive a Redis restart. */
function backoff(times: number): number {
  return Math.min(50 * 2 ** Math.min(times, 6), 2000);
}
