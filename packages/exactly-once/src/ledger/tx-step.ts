import type { RedisClient } from '@tickwork/core';
import { TickworkError } from '@tickwork/core';
import { keyOutsideSlot } from '@tickwork/core';
import { holdUntilTurnEnds } from '@tickwork/core';
import { runScript, type Script } from '@tickwork/core';

/**
 * On Redis Cluster a Redis step wrote a key outside its run's slot: the step's script (its writes and its
 * record together) can only run on one slot. The message names the key and the hash tag to give it.
 */
export class RedisStepSlotError extends TickworkError {
  override name = 'RedisStepSlotError';
}

/**
 * The KEYS of a Redis step's script: the run's record, its steps, then each key the step writes. On a
 * cluster every key must hash to the record's slot, which is its queue's (redis/keyspace.ts): a key
 * carrying the queue's tag (`{billing}` for queue `billing` or `billing.dlq`) does.
 */
function txStepKeys(redis: RedisClient, record: string, steps: string, commands: readonly (string | number)[][]): string[] {
  // Each key once, in the order first written (a loop, not a Set: a step writes a key or two).
  const keys = [record, steps];
  for (const c of commands) {
    const key = String(c[1]);
    if (!keys.includes(key, 2)) keys.push(key);
  }
  if (!redis.isCluster) return keys;
  const outside = keyOutsideSlot(record, keys.slice(2));
  if (outside) {
    const { key, tag } = outside;
    throw new RedisStepSlotError(`redisStep writes ${JSON.stringify(key)}, outside its run's slot: on Redis Cluster the keys a redisStep writes must contain the queue's hash tag ${tag} (e.g. "myapp:${tag}:charges")`);
  }
  return keys;
}

/**
 * Runs the script that commits a Redis step (TX_STEP_LUA, or CLAIM_TX_STEP_LUA claiming the run with it):
 * KEYS as txStepKeys makes them; ARGV the script's own `words`, then each command's length and words. The
 * steps of the runs of one turn leave in one write (holdUntilTurnEnds).
 */
export function runTxStepScript(redis: RedisClient, script: Script, record: string, steps: string, words: (string | number)[], commands: readonly (string | number)[][]): Promise<unknown> {
  const keys = txStepKeys(redis, record, steps, commands);
  for (const c of commands) {
    words.push(c.length);
    for (const word of c) words.push(word);
  }
  holdUntilTurnEnds(redis);
  return runScript(redis, script, keys, words);
}
