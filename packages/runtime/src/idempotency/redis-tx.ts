import type { RedisClient } from '../connection.js';
import { TickworkError } from '../errors.js';
import { keyOutsideSlot } from '../redis/by-slot.js';
import { corkUntilTurnEnds } from '../redis/cork.js';
import { runScript, type Script } from '../redis/scripts.js';

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
 * steps of the runs of one turn leave in one write (corkUntilTurnEnds).
 */
export function runTxStepScript(redis: RedisClient, script: Script, record: string, steps: string, words: (string | number)[], commands: readonly (string | number)[][]): Promise<unknown> {
  const keys = txStepKeys(redis, record, steps, commands);
  for (const c of commands) {
    words.push(c.length);
    for (const word of c) words.push(word);
  }
  corkUntilTurnEnds(redis);
  return runScript(redis, script, keys, words);
}

/**
 * The writes of a Redis step (`ctx.redisStep`), recorded by the step's function and then committed by one
 * script together with the step's record, only while the run still owns its lease (ledger-lua.ts,
 * TX_STEP_LUA). Either the writes and the record both happen, or neither does: a crash before the script
 * leaves nothing, a crash after it leaves both, and a delivery that lost the run commits nothing.
 *
 * Each command names one key, its first argument (as nearly every Redis write command does).
 */
export class RedisTx {
  /** @internal the commands recorded so far, each `[command, key, ...args]`. */
  readonly commands: (string | number)[][] = [];

  /** Any write command whose first argument is its key: `tx.call('HINCRBY', key, field, 1)`. */
  call(command: string, key: string, ...args: (string | number)[]): this {
    if (typeof command !== 'string' || !/^[a-zA-Z][a-zA-Z.]*$/.test(command)) throw new TypeError(`redisStep: "${command}" is not a Redis command name`);
    if (typeof key !== 'string' || key.length === 0) throw new TypeError(`redisStep: ${command} needs a key as its first argument`);
    this.commands.push([command, key, ...args]);
    return this;
  }

  set(key: string, value: string | number, ...options: (string | number)[]): this {
    return this.call('SET', key, value, ...options);
  }
  incrby(key: string, by: number): this {
    return this.call('INCRBY', key, by);
  }
  hset(key: string, field: string, value: string | number): this {
    return this.call('HSET', key, field, value);
  }
  hincrby(key: string, field: string, by: number): this {
    return this.call('HINCRBY', key, field, by);
  }
  rpush(key: string, ...values: (string | number)[]): this {
    return this.call('RPUSH', key, ...values);
  }
  lpush(key: string, ...values: (string | number)[]): this {
    return this.call('LPUSH', key, ...values);
  }
  sadd(key: string, ...members: (string | number)[]): this {
    return this.call('SADD', key, ...members);
  }
  zadd(key: string, score: number, member: string): this {
    return this.call('ZADD', key, score, member);
  }
  del(key: string): this {
    return this.call('DEL', key);
  }
  pexpire(key: string, ms: number): this {
    return this.call('PEXPIRE', key, ms);
  }
}
