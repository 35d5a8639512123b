import { keyOutsideSlot, type RedisClient, type RedisTx } from '@tickwork/core';
import { RedisStepSlotError } from '@tickwork/exactly-once';

/**
 * A batch's `ctx.tx` writes as a completion script takes them: each key the writes name appended to `keys`
 * (once), each write appended to `argv` as its length and words. The script applies them in order.
 */
export function appendWrites(tx: RedisTx, keys: string[], fixedKeys: number, argv: (string | number)[]): void {
  for (const c of tx.commands) {
    const key = String(c[1]);
    if (!keys.includes(key, fixedKeys)) keys.push(key);
    argv.push(c.length, ...c);
  }
}

/**
 * On Redis Cluster a batch's writes must share its queue's slot: the script completing the batch runs on
 * one. Thrown before anything is sent, naming the key and the hash tag to give it. `keys[0]` is the queue's.
 */
export function checkSlots(redis: RedisClient, keys: readonly string[], fixedKeys: number): void {
  if (!redis.isCluster || keys.length <= fixedKeys) return;
  const outside = keyOutsideSlot(keys[0] as string, keys.slice(fixedKeys));
  if (outside) {
    const { key, tag } = outside;
    throw new RedisStepSlotError(`the batch writes ${JSON.stringify(key)}, outside its queue's slot: on Redis Cluster the keys a batch writes must contain the queue's hash tag ${tag} (e.g. "myapp:${tag}:totals")`);
  }
}
