import type { RedisClient } from './connection.js';

/**
 * Holds a connection's writes until the end of the event-loop turn, so the commands many jobs send in one
 * turn leave in a few system calls (the BullMQ engine's cork: @tickwork/bullmq-engine). ioredis has no public
 * way to do this, so a connection holds nothing unless the engine, on its fast path, gave it a hold
 * (holdWritesOn): every guarantee is the same either way, only the number of socket writes differs.
 */
export type TurnHold = (redis: RedisClient) => void;

const holds = new WeakMap<RedisClient, TurnHold>();

/** Holds `redis`'s writes until the turn ends, if it was given a hold; else nothing. */
export function holdUntilTurnEnds(redis: RedisClient): void {
  holds.get(redis)?.(redis);
}

/** Gives `redis` the hold its later writes use (undefined: none). */
export function holdWritesOn(redis: RedisClient, hold: TurnHold | undefined): void {
  if (hold) holds.set(redis, hold);
  else holds.delete(redis);
}
