import type { RedisClient } from './connection.js';

/**
 * Holds a connection's writes until the end of the event-loop turn, so the commands many jobs send in one
 * turn leave in a few system calls (see the engine's cork: @tickwork/bullmq-engine). ioredis has no public
 * way to do this, so the default holds nothing: every guarantee is the same either way, only the number
 * of socket writes differs. The BullMQ engine installs its own when the installed ioredis matches its
 * contract (useTurnHold).
 */
export type TurnHold = (redis: RedisClient) => void;

const none: TurnHold = () => undefined;
let hold: TurnHold = none;

/** Holds `redis`'s writes until the turn ends, if a hold is installed; else nothing. */
export function holdUntilTurnEnds(redis: RedisClient): void {
  hold(redis);
}

/** Installs the hold every later call uses (undefined: none). */
export function useTurnHold(next: TurnHold | undefined): void {
  hold = next ?? none;
}
