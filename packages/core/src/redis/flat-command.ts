import { Command } from 'ioredis';
import type { RedisClient } from './connection.js';

const NO_ARGS: string[] = [];

/**
 * Sends `name` with `args` as they are, through the connection's public `sendCommand` (so its command
 * deadline applies). Why not `redis.evalsha(...)`: ioredis's command methods build their Command with
 * `args.flat()`, which on Node 20 costs about 120 ns an argument (against under 1 ns for a copy), and a batched
 * script call carries hundreds of arguments that are flat already: a 600-argument EVALSHA cost 416–527 ns of
 * Node CPU an argument through `redis.evalsha`, 260–340 ns through here. In a herd's worker profile, building
 * commands (mostly that flattening) was 8% of the worker's CPU. A connection with a key prefix, automatic pipelining or friendly error stacks
 * goes through ioredis's own method, which applies them.
 */
export function sendFlat(redis: RedisClient, name: string, args: (string | number)[]): Promise<unknown> {
  // `args` is the caller's own array (made for this call), so its numbers become strings in place, as
  // ioredis's Command does to the arguments it is built with (the constructor's stringifyArguments).
  const opts = redis.options as { keyPrefix?: string; enableAutoPipelining?: boolean; showFriendlyErrorStack?: boolean; redisOptions?: { keyPrefix?: string } };
  if (opts.keyPrefix || opts.redisOptions?.keyPrefix || opts.enableAutoPipelining || opts.showFriendlyErrorStack) return redis.call(name, ...args);
  const command = new Command(name, NO_ARGS, { replyEncoding: 'utf8' });
  for (let i = 0; i < args.length; i++) if (typeof args[i] !== 'string') args[i] = String(args[i]);
  command.args = args;
  return redis.sendCommand(command) as Promise<unknown>;
}
