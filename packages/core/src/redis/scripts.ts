import { createHash } from 'node:crypto';
import type { RedisClient } from './connection.js';
import { pipelineBySlot, type SlotCommand } from './by-slot.js';
import { sendFlat } from './flat-command.js';

/**
 * The one way tickwork runs Lua: EVALSHA with the script's SHA1, falling back to EVAL when the server does
 * not know the script (a new or restarted Redis). The SHA is computed once per script, at module load.
 */
export interface Script {
  readonly lua: string;
  readonly sha: string;
}

export function defineScript(lua: string): Script {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}

/** EVALSHA, falling back to EVAL when the server does not know the script (a new or restarted Redis). */
export async function evalCached(redis: RedisClient, lua: string, sha: string, keys: readonly string[], argv: readonly (string | number)[]): Promise<unknown> {
  try {
    return await sendFlat(redis, 'evalsha', [sha, keys.length, ...keys, ...argv]);
  } catch (err) {
    if (!(err instanceof Error) || !err.message.includes('NOSCRIPT')) throw err;
    return sendFlat(redis, 'eval', [lua, keys.length, ...keys, ...argv]);
  }
}

export function runScript(redis: RedisClient, script: Script, keys: readonly string[], argv: readonly (string | number)[]): Promise<unknown> {
  return evalCached(redis, script.lua, script.sha, keys, argv);
}

export interface ScriptCall {
  keys: string[];
  argv: (string | number)[];
}

/**
 * Several calls of one script in one round trip (a pipeline of EVALSHA). Calls the server answered with
 * NOSCRIPT are sent again with EVAL (only after a Redis restart). Each call's error is thrown as its result
 * would be: the first failing call rejects the whole, since callers treat a batch as one step. On a
 * cluster the calls go as one pipeline per slot (each call's keys must share its first key's slot).
 */
export async function runScriptMany(redis: RedisClient, script: Script, calls: readonly ScriptCall[]): Promise<unknown[]> {
  if (calls.length === 0) return [];
  const replies = await pipelineBySlot(
    redis,
    calls.map((c): SlotCommand => ['evalsha', script.sha, c.keys.length, ...c.keys, ...c.argv]),
    (c) => String(c[3]),
  );
  const out: unknown[] = [];
  for (let i = 0; i < calls.length; i++) {
    const [err, value] = replies[i] ?? [new Error('no reply'), null];
    const call = calls[i] as ScriptCall;
    if (err && err.message.includes('NOSCRIPT')) out.push(await redis.eval(script.lua, call.keys.length, ...call.keys, ...call.argv));
    else if (err) throw err;
    else out.push(value);
  }
  return out;
}
