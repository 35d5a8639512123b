import { defineScript, readBySlot, type RedisClient, type ScriptCall, type SlotCommand } from '@tickwork/core';
import { HOUR_SLOTS, HOUR_MS, type Ring, type TimelineLayout } from './layout.js';

/**
 * Reading and writing a timeline's string (layout.ts). One write is one script call on one key, so on
 * Redis Cluster it is in one slot whatever the key.
 */

/** A timeline key lives this long past its last write: a queue or schedule gone for its hour ring's span leaves nothing behind. */
export const TIMELINE_TTL_MS = HOUR_SLOTS * HOUR_MS + 24 * HOUR_MS;

/**
 * KEYS[1] the timeline. ARGV: size (u32 counters), width (counters per slot), op (add|max), ttl ms, then
 * groups: ring base, ring slots, slot, stamp, n, then n pairs field, value. Creates the string at its full
 * size (SETRANGE on a new key allocates exactly that: it never grows afterwards). A slot holding an older
 * stamp is zeroed and takes this one; a slot holding a newer one (this group is older than its ring's
 * span) is left alone.
 */
const WRITE = defineScript(`local key = KEYS[1]
local size, width, max = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == 'max'
if redis.call('EXISTS', key) == 0 then redis.call('SETRANGE', key, size * 4 - 1, '\\0') end
local i = 5
while i <= #ARGV do
  local base, slots, slot, stamp, n = tonumber(ARGV[i]), tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4])
  i = i + 5
  local held = redis.call('BITFIELD', key, 'GET', 'u32', '#' .. (base + slot))[1]
  if held <= stamp then
    local cmd = {}
    if held < stamp then
      cmd[#cmd + 1] = 'SET'; cmd[#cmd + 1] = 'u32'; cmd[#cmd + 1] = '#' .. (base + slot); cmd[#cmd + 1] = stamp
      for f = 1, width - 1 do
        cmd[#cmd + 1] = 'SET'; cmd[#cmd + 1] = 'u32'; cmd[#cmd + 1] = '#' .. (base + f * slots + slot); cmd[#cmd + 1] = 0
      end
    end
    cmd[#cmd + 1] = 'OVERFLOW'; cmd[#cmd + 1] = 'SAT'
    for p = 0, n - 1 do
      local at = '#' .. (base + tonumber(ARGV[i + 2 * p]) * slots + slot)
      local v = tonumber(ARGV[i + 2 * p + 1])
      if max then
        local cur = 0
        if held == stamp then cur = redis.call('BITFIELD', key, 'GET', 'u32', at)[1] end
        if v > cur then cmd[#cmd + 1] = 'SET'; cmd[#cmd + 1] = 'u32'; cmd[#cmd + 1] = at; cmd[#cmd + 1] = v end
      else
        cmd[#cmd + 1] = 'INCRBY'; cmd[#cmd + 1] = 'u32'; cmd[#cmd + 1] = at; cmd[#cmd + 1] = v
      end
    end
    redis.call('BITFIELD', key, unpack(cmd))
  end
  i = i + 2 * n
end
redis.call('PEXPIRE', key, ARGV[4])
return 1`);

export const TIMELINE_WRITE = WRITE;

/** One row of counts to add (or, for a `max` layout, to raise to): `values[f]` for field f (index 0, the stamp, unused). */
export interface TimelineRow {
  /** Any time inside the period the row covers (its finest ring's slot). */
  at: number;
  values: ArrayLike<number>;
}

/** The script call that writes `rows` into `key` (every ring of the layout). */
export function writeCall(key: string, layout: TimelineLayout, rows: readonly TimelineRow[], ttlMs = TIMELINE_TTL_MS): ScriptCall {
  const argv: (string | number)[] = [layout.size, layout.width, layout.op, ttlMs];
  for (const row of rows) {
    const pairs: number[] = [];
    for (let f = 1; f < layout.width; f++) {
      const v = Math.round(row.values[f] ?? 0);
      if (v > 0) pairs.push(f, v);
    }
    if (pairs.length === 0) continue;
    for (const ring of layout.rings) {
      const stamp = Math.floor(row.at / ring.slotMs);
      argv.push(ring.base, ring.slots, stamp % ring.slots, stamp, pairs.length / 2, ...pairs);
    }
  }
  return { keys: [key], argv };
}

/** One slot read back: the start of its period, and its counters (by field index; index 0 the stamp), or null when nothing was written in it. */
export interface TimelineSlot {
  at: number;
  values: number[] | null;
}

/**
 * The slots of `ring` from the one holding `fromMs` to the one holding `toMs` (at most a ring's worth, the
 * newest), oldest first, with `fields` (indexes; all when omitted). A few GETRANGEs per field, in one pipeline.
 */
export async function readRing(redis: RedisClient, key: string, layout: TimelineLayout, ring: Ring, fromMs: number, toMs: number, fields?: readonly number[]): Promise<TimelineSlot[]> {
  const last = Math.floor(toMs / ring.slotMs);
  const first = Math.max(Math.floor(fromMs / ring.slotMs), last - ring.slots + 1);
  if (first > last) return [];
  const start = first % ring.slots;
  const count = last - first + 1;
  // The slots as at most two contiguous runs of the ring.
  const runs: [from: number, to: number][] = start + count <= ring.slots ? [[start, start + count - 1]] : [[start, ring.slots - 1], [0, (start + count - 1) % ring.slots]];
  const wanted = [0, ...(fields ?? Array.from({ length: layout.width - 1 }, (_, i) => i + 1)).filter((f) => f > 0)];
  const commands: SlotCommand[] = [];
  for (const f of wanted) for (const [a, b] of runs) commands.push(['getrangeBuffer', key, (ring.base + f * ring.slots + a) * 4, (ring.base + f * ring.slots + b) * 4 + 3]);
  const replies = (await readBySlot(redis, commands, (c) => String(c[1]))) as Buffer[];
  const column = (w: number): Buffer => Buffer.concat(runs.map((_, r) => replies[w * runs.length + r] ?? Buffer.alloc(0)));
  const columns = wanted.map((_, w) => column(w));
  const u32 = (b: Buffer | undefined, i: number): number => (b && b.length >= i * 4 + 4 ? b.readUInt32BE(i * 4) : 0);
  const out: TimelineSlot[] = [];
  for (let i = 0; i < count; i++) {
    const stamp = first + i;
    const at = stamp * ring.slotMs;
    if (u32(columns[0], i) !== stamp) {
      out.push({ at, values: null });
      continue;
    }
    const values = new Array<number>(layout.width).fill(0);
    values[0] = stamp;
    wanted.forEach((f, w) => (values[f] = u32(columns[w], i)));
    out.push({ at, values });
  }
  return out;
}
