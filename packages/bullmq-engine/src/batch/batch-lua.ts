import { defineScript, type Script } from '@tickwork/core';
import { bullmqLua } from '../lua/bullmq-includes.js';
import { COMPLETE_DONE, MAX_DONE } from './batch-lua-mixed.js';
import { APPLY_WRITES, COMPLETE_JOBS, HOLD_STALLED_CHECK, HOLDS_LEASE, REMOVE_FROM_ACTIVE } from './batch-lua-shared.js';

export { FAIL_BATCH, RECLAIM_BATCHES, RENEW_BATCHES } from './batch-lua-leases.js';

/**
 * The scripts that take and complete a batch (the fast batch store, fast-batch-store.ts); batch-lua-shared.ts
 * says what they keep and how a batch is fenced. Each script's KEYS, in the order its comment gives, are made
 * once per queue (fast-batch-store.ts).
 */

/**
 * Takes a batch. KEYS: wait, active, prioritized, events, delayed, meta, marker, batches, batch-ids, pc,
 * batch-format, stalled-check, completed, batch-done. ARGV: job key prefix, now (ms), max jobs, batch token,
 * lease (ms), max events, hold (ms), format, keep count, keep age (ms). A queue whose format marker says
 * another format is left alone: {'format', its marker}. Due delayed jobs are promoted first, by BullMQ's own
 * promoteDelayedJobs as its fetch does; then up to `max` ids are taken oldest first from wait, then
 * prioritized. Each job's hash is stamped (processedOn, attemptsStarted) and read; a job whose hash is gone
 * is dropped. A job a public store committed (its done record in batch-done: batch-lua-mixed.ts) is
 * completed here, not taken, and more are taken in its place. A batch taken holds BullMQ's stalled check
 * off the queue for `hold` ms (batch-lua-shared.ts). Returns {'jobs', JSON [[id, name, data, attemptsMade
 * (, options as stored when they are not JSON)], ...]}, or {'paused'}, or {'empty', next delayed time in ms or ''}.
 */
const FETCH_SOURCE = `
local rcall = redis.call
--- @include "includes/promoteDelayedJobs"
--- @include "includes/getNextDelayedTimestamp"
${HOLD_STALLED_CHECK}
${COMPLETE_JOBS}
${COMPLETE_DONE}
local prefix, now, max, token = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local format = rcall('GET', KEYS[11])
if format ~= ARGV[8] then
  if format then return {'format', format} end
  rcall('SET', KEYS[11], ARGV[8])
end
local paused = rcall('HEXISTS', KEYS[6], 'paused') == 1
promoteDelayedJobs(KEYS[5], KEYS[7], KEYS[1], KEYS[3], KEYS[4], prefix, now, KEYS[10], paused)
if paused then return {'paused'} end
-- Done records exist only where a public store ran: one EXISTS per fetch, the records read only then.
local records = rcall('EXISTS', KEYS[14]) == 1 and KEYS[14]
local out, taken, done = {}, {}, {ids = {}, attempts = {}}
repeat
  local before = #done.ids
  local want = max - #taken
  local ids = rcall('RPOP', KEYS[1], want) or {}
  if #ids < want then
    local p = rcall('ZPOPMIN', KEYS[3], want - #ids)
    for i = 1, #p, 2 do ids[#ids + 1] = p[i] end
  end
  for _, id in ipairs(ids) do
    local jk = prefix .. id
    local f = rcall('HMGET', jk, 'name', 'data', 'atm', 'ats', 'timestamp', 'opts')
    if f[1] then
      if records and f[5] and rcall('HGET', records, id) == f[5] then
        done.ids[#done.ids + 1] = id
        done.attempts[#done.ids] = (tonumber(f[3]) or 0) + 1
      else
        rcall('HSET', jk, 'processedOn', now, 'ats', (tonumber(f[4]) or 0) + 1)
        taken[#taken + 1] = id
        local job = {id, f[1], f[2] or '{}', tonumber(f[3]) or 0}
        -- Options BullMQ could not decode go with it as stored, for the runner to fail it (batch-admit.ts).
        if f[6] and not pcall(cjson.decode, f[6]) then job[5] = f[6] end
        out[#out + 1] = job
      end
    end
  end
-- Refilled only for the jobs completed here, and at most MAX_DONE of them per fetch.
until #done.ids == before or #taken >= max or #done.ids >= ${MAX_DONE}
if #done.ids > 0 then completeDone(prefix, records, KEYS[13], KEYS[4], done, now, tonumber(ARGV[9]), tonumber(ARGV[10]), ARGV[6]) end
if #taken == 0 then
  -- The cap reached: the caller fetches again at once rather than waiting for a job to be added.
  if #done.ids >= ${MAX_DONE} then return {'empty', tostring(now)} end
  local nxt = getNextDelayedTimestamp(KEYS[5])
  return {'empty', nxt and tostring(math.floor(nxt)) or ''}
end
holdStalledCheck(KEYS[12], now, ARGV[7])
for i = 1, #taken, 500 do rcall('LPUSH', KEYS[2], unpack(taken, i, math.min(i + 499, #taken))) end
rcall('ZADD', KEYS[8], now + tonumber(ARGV[5]), token)
rcall('HSET', KEYS[9], token, cjson.encode(taken))
rcall('XADD', KEYS[4], 'MAXLEN', '~', ARGV[6], '*', 'event', 'batch:active', 'batch', token, 'count', #taken)
return {'jobs', cjson.encode(out)}
`;

let fetchScript: Script | undefined;

/**
 * FETCH_BATCH, built on first use rather than at import: it is made from the installed BullMQ's Lua files
 * (bullmqLua), and a BullMQ without them must fail only the fast store that needs them, not the import of the
 * engine that would otherwise run on BullMQ's public paths.
 */
export const FETCH_BATCH: Script = {
  get lua() {
    fetchScript ??= defineScript(bullmqLua(FETCH_SOURCE));
    return fetchScript.lua;
  },
  get sha() {
    fetchScript ??= defineScript(bullmqLua(FETCH_SOURCE));
    return fetchScript.sha;
  },
};

/**
 * Completes a batch's jobs with its Redis writes, if the batch still holds its lease. KEYS: active, events,
 * completed, batches, batch-ids, then each key the writes name. ARGV: job key prefix, token, now, keep count
 * (0: delete on completion), keep age (ms, 0: no age limit), max events, n, the fence's grace (ms), the jobs'
 * attempts made with this one, comma-separated (for kept jobs), the n ids, then each write as its length and
 * words. Returns n (0 for a batch whose jobs the handler all failed alone: its writes are still committed and
 * it ends); or -1 with nothing written when the lease was lost; or {'err', message} when a write failed (a
 * wrong type): the writes before it stay applied (Redis has no rollback, as for a `ctx.redisStep`), the jobs
 * are not completed and the batch keeps its lease, for the caller to fail it.
 */
export const COMPLETE_BATCH = defineScript(`
${APPLY_WRITES}
${REMOVE_FROM_ACTIVE}
${HOLDS_LEASE}
${COMPLETE_JOBS}
local rcall = redis.call
local prefix, token, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
if not holdsLease(KEYS[4], token, now, tonumber(ARGV[8])) then return -1 end
local n = tonumber(ARGV[7])
local failed = applyWrites(10 + n)
if failed then return {'err', failed} end
rcall('ZREM', KEYS[4], token)
rcall('HDEL', KEYS[5], token)
local ids = {unpack(ARGV, 10, 9 + n)}
local allThere = removeFromActive(KEYS[1], ids)
local attempts = {}
for a in string.gmatch(ARGV[9], '%d+') do attempts[#attempts + 1] = a end
-- A job removed while its batch ran (an operator's remove, which takes it off the active list) stays removed.
completeJobs(prefix, KEYS[3], ids, attempts, now, tonumber(ARGV[4]), tonumber(ARGV[5]), not allThere)
rcall('XADD', KEYS[2], 'MAXLEN', '~', ARGV[6], '*', 'event', 'batch:completed', 'batch', token, 'count', n)
return n
`);
