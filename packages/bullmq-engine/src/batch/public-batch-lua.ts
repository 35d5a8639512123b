import { defineScript } from '@tickwork/core';
import { APPLY_WRITES } from './batch-lua-shared.js';

/**
 * The public batch store's scripts (public-batch-store.ts). They touch tickwork's own keys only, never
 * BullMQ's: `batch-leases` (a sorted set, batch token → lease deadline in ms by Redis's clock),
 * `batch-done` (a hash, job id → the job's creation timestamp: the job's effects are committed, its
 * acknowledgement may not have happened) and `batch-public` (until when a public store may hold jobs: fast
 * stores on the same queue read it and the records, batch-lua-mixed.ts). Time is Redis's (TIME), the clock BullMQ's locks expire by, so a
 * lease can be held to end before the locks of its jobs (public-batch-store.ts says how).
 */

/** The script's clock: Redis's, in ms. Scripts that write after reading it ask for effects replication (needed before Redis 7). */
const NOW = `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/** Whether batch `token` holds its lease at `now`. */
const HOLDS = `
local function holds(leasesKey, token)
  local deadline = redis.call('ZSCORE', leasesKey, token)
  return deadline and tonumber(deadline) >= now
end
`;

/**
 * Marks that a public store may hold jobs until `now + span` at least: `batch-public` (Redis time in ms,
 * raised only), which fast stores on the same queue read to take back a dead public store's jobs
 * (batch-lua-mixed.ts). Set before anything that has BullMQ lock a job for the store.
 */
const MARK = `
local function markPublic(key, span)
  local horizon = now + tonumber(span)
  if (tonumber(redis.call('GET', key)) or 0) < horizon then redis.call('SET', key, horizon) end
end
`;

/** Redis's clock in ms, and the public mark for `ARGV[1]` ms (MARK). KEYS: batch-leases, batch-public. */
export const LEASE_CLOCK = defineScript(`${NOW}${MARK}
markPublic(KEYS[2], ARGV[1])
return now`);

/** Opens batch `ARGV[1]`'s lease for `ARGV[2]` ms from now, and the public mark for `ARGV[3]` ms (MARK). KEYS: batch-leases, batch-public. */
export const LEASE_OPEN = defineScript(`${NOW}${MARK}
markPublic(KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return now`);

/**
 * Moves batch `ARGV[1]`'s deadline to `ARGV[2]` (later only) if it still holds its lease; a lease that lapsed
 * is dropped instead. KEYS: batch-leases. Returns 1, or 0 when the lease had lapsed.
 */
export const LEASE_RENEW = defineScript(`${NOW}${HOLDS}
if not holds(KEYS[1], ARGV[1]) then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', 'GT', ARGV[2], ARGV[1])
return 1`);

/** Whether batch `ARGV[1]` holds its lease (1) or not (0); `ARGV[2]` '1' drops it as well. KEYS: batch-leases. */
export const LEASE_CHECK = defineScript(`${NOW}${HOLDS}
local held = holds(KEYS[1], ARGV[1])
if ARGV[2] == '1' then redis.call('ZREM', KEYS[1], ARGV[1]) end
return held and 1 or 0`);

/** Drops the leases that lapsed (batches whose worker died: BullMQ's stalled check takes their jobs back). KEYS: batch-leases. */
export const LEASE_EXPIRE = defineScript(`${NOW}
return redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. now)`);

/**
 * Commits a batch's writes with a done record per job, if the batch holds its lease and none of its jobs
 * is done already. KEYS: batch-leases, batch-done, then each key the writes name. ARGV: token, n, the done
 * records' time to live (ms), the n ids, the n jobs' creation timestamps, then each write as its length and
 * words. Returns n (the lease released); -1 when the lease was lost, -2 when a job was done already (nothing
 * written either way); or {'err', message} when a write failed (a wrong type): the writes before it stay
 * applied (Redis has no rollback), no record is written, the lease is kept for the caller to fail the attempt.
 */
export const COMMIT_BATCH = defineScript(`${NOW}${HOLDS}${APPLY_WRITES}
local rcall = redis.call
local token, n = ARGV[1], tonumber(ARGV[2])
if not holds(KEYS[1], token) then return -1 end
for k = 1, n do
  if rcall('HGET', KEYS[2], ARGV[3 + k]) == ARGV[3 + n + k] then return -2 end
end
local failed = applyWrites(4 + 2 * n)
if failed then return {'err', failed} end
for k = 1, n do rcall('HSET', KEYS[2], ARGV[3 + k], ARGV[3 + n + k]) end
if n > 0 then rcall('PEXPIRE', KEYS[2], ARGV[3]) end
rcall('ZREM', KEYS[1], token)
return n`);

/** Drops job `ARGV[1]`'s done record if it still holds `ARGV[2]` (the job's creation timestamp). KEYS: batch-done. */
export const DROP_RECORD = defineScript(`if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0`);
