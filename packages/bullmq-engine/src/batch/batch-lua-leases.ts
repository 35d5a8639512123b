import { defineScript } from '@tickwork/core';
import { ADOPT_ORPHANS } from './batch-lua-mixed.js';
import { FAIL_FOR_GOOD, HOLD_STALLED_CHECK, HOLDS_LEASE, REMOVE_FROM_ACTIVE } from './batch-lua-shared.js';

/**
 * The scripts that fail a batch's attempts, renew its lease and take back expired ones (the fast batch
 * store, fast-batch-store.ts); batch-lua-shared.ts says what they keep and how a batch is fenced.
 */

/**
 * Settles failed attempts of some of a batch's jobs, if the batch still holds its lease. KEYS: active,
 * events, failed, delayed, wait, marker, batches, batch-ids. ARGV: job key prefix, token, now, max events,
 * release ('1': the batch ends with this call, its lease is dropped), the fence's grace (ms), then per job:
 * id, reason, delay (ms; -1 for a final failure). A final failure goes to the failed set (the DLQ routing
 * moves it on); a retry to the delayed set, or back to wait when it has no delay. Returns the number settled, or -1 when the lease was lost (nothing written).
 */
export const FAIL_BATCH = defineScript(`
${REMOVE_FROM_ACTIVE}
${FAIL_FOR_GOOD}
${HOLDS_LEASE}
local rcall = redis.call
local prefix, token, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
if not holdsLease(KEYS[7], token, now, tonumber(ARGV[6])) then return -1 end
if ARGV[5] == '1' then
  rcall('ZREM', KEYS[7], token)
  rcall('HDEL', KEYS[8], token)
end
local ids, woke = {}, false
for i = 7, #ARGV, 3 do
  local id, reason, delay = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local jk = prefix .. id
  ids[#ids + 1] = id
  -- A job removed while its batch ran (an operator's remove) stays removed.
  if rcall('EXISTS', jk) == 1 then
    rcall('HINCRBY', jk, 'atm', 1)
    if delay < 0 then
      failForGood(KEYS[3], KEYS[2], ARGV[4], jk, id, reason, now)
    elseif delay > 0 then
      rcall('HSET', jk, 'failedReason', reason, 'delay', delay)
      rcall('ZADD', KEYS[4], (now + delay) * 0x1000, id)
      rcall('ZADD', KEYS[6], now + delay, '1')
      rcall('XADD', KEYS[2], 'MAXLEN', '~', ARGV[4], '*', 'event', 'delayed', 'jobId', id, 'delay', now + delay)
    else
      rcall('HSET', jk, 'failedReason', reason)
      rcall('LPUSH', KEYS[5], id)
      woke = true
      rcall('XADD', KEYS[2], 'MAXLEN', '~', ARGV[4], '*', 'event', 'waiting', 'jobId', id, 'prev', 'failed')
    end
  end
end
removeFromActive(KEYS[1], ids)
if woke then rcall('ZADD', KEYS[6], 0, '0') end
return #ids
`);

/**
 * Renews the leases of batches in flight. KEYS: batches, stalled-check. ARGV: now, the new deadline, hold
 * (ms), the fence's grace (ms), then the tokens. A batch no longer in `batches`, or past the fence, is not
 * revived: its settle is refused and the reclaim takes its jobs back. A renewal holds BullMQ's stalled check
 * off the queue for `hold` ms (batch-lua-shared.ts).
 */
export const RENEW_BATCHES = defineScript(`
${HOLD_STALLED_CHECK}
local rcall = redis.call
local now, grace = tonumber(ARGV[1]), tonumber(ARGV[4])
local renewed = 0
for i = 5, #ARGV do
  local deadline = rcall('ZSCORE', KEYS[1], ARGV[i])
  if deadline and now <= tonumber(deadline) + grace then
    rcall('ZADD', KEYS[1], 'XX', 'GT', ARGV[2], ARGV[i])
    renewed = renewed + 1
  end
end
if renewed > 0 then holdStalledCheck(KEYS[2], now, ARGV[3]) end
return renewed
`);

/**
 * Puts back the jobs of batches whose lease expired (their worker died or stopped renewing). KEYS: batches,
 * batch-ids, active, wait, failed, events, marker, batch-format, batch-public, batch-done, batch-public-scan,
 * completed. ARGV: job key prefix, now, max stalled count, max events, format, scan interval (ms). A queue
 * whose format marker says another format is left alone: {-1, its marker}. A job still active goes to the
 * head of wait (it runs next), or to the failed set once it has stalled more than the max; unless another
 * holder has it now: a batch still in flight (the expired batch failed it for a retry and another took it,
 * or BullMQ's stalled check moved it while no batch held the check off and another batch took it), or a
 * BullMQ Worker (its lock). Where a public store runs or ran (`batch-public` or `batch-done` exists), at most
 * once per scan interval across the queue's workers, also takes back the jobs a dead public store left in
 * active (batch-lua-mixed.ts). Returns {jobs put back, ids failed, of those put back the public store's}.
 */
export const RECLAIM_BATCHES = defineScript(`
${FAIL_FOR_GOOD}
${REMOVE_FROM_ACTIVE}
${ADOPT_ORPHANS}
local rcall = redis.call
local prefix, now = ARGV[1], ARGV[2]
local format = rcall('GET', KEYS[8])
if format and format ~= ARGV[5] then return {-1, format} end
local back, failed = 0, {}
local expired = rcall('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 20)
if #expired > 0 then
  -- The jobs of the batches still in flight (read only when some expired: a rare path).
  local gone, live = {}, {}
  for _, token in ipairs(expired) do gone[token] = true end
  local all = rcall('HGETALL', KEYS[2])
  for i = 1, #all, 2 do
    if not gone[all[i]] then
      for _, id in ipairs(cjson.decode(all[i + 1])) do live[id] = true end
    end
  end
  for _, token in ipairs(expired) do
    local list = rcall('HGET', KEYS[2], token)
    rcall('ZREM', KEYS[1], token)
    rcall('HDEL', KEYS[2], token)
    if list then
      for _, id in ipairs(cjson.decode(list)) do
        local jk = prefix .. id
        if not live[id] and rcall('EXISTS', jk .. ':lock') == 0 and rcall('LREM', KEYS[3], -1, id) > 0 then
          if rcall('HINCRBY', jk, 'stc', 1) > tonumber(ARGV[3]) then
            failForGood(KEYS[5], KEYS[6], ARGV[4], jk, id, 'job stalled more than allowable limit', now)
            failed[#failed + 1] = id
          else
            rcall('RPUSH', KEYS[4], id)
            rcall('XADD', KEYS[6], 'MAXLEN', '~', ARGV[4], '*', 'event', 'stalled', 'jobId', id)
            back = back + 1
          end
        end
      end
    end
  end
end
local adopted = 0
-- Where no public store ever ran: this EXISTS alone.
if rcall('EXISTS', KEYS[9], KEYS[10]) > 0 and rcall('SET', KEYS[11], now, 'NX', 'PX', ARGV[6]) then
  local k = {batchIds = KEYS[2], active = KEYS[3], wait = KEYS[4], failed = KEYS[5], events = KEYS[6], mark = KEYS[9], records = KEYS[10], completed = KEYS[12]}
  adopted = adoptOrphans(k, prefix, tonumber(now), tonumber(ARGV[3]), ARGV[4], failed)
end
if back + adopted > 0 then rcall('ZADD', KEYS[7], 0, '0') end
return {back + adopted, failed, adopted}
`);
