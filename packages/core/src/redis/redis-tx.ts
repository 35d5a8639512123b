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
