import { defineScript } from '@tickwork/core';

/**
 * The scripts of batch jobs (batch-runner.ts). They work on BullMQ's own structures of the batch job's queue
 * (wait, active, prioritized, delayed, completed, failed, the events stream and the wake-up marker), so
 * producers, Bull Board, the dashboard and the DLQ see batch jobs as BullMQ jobs; two keys of their own
 * hold the batches in flight: `batches` (a sorted set, batch token → lease deadline in ms) and `batch-ids`
 * (a hash, batch token → the batch's job ids as a JSON array). A batch is fenced by its lease: every script
 * that settles a batch's jobs first checks that the batch is still in `batches`, and the reclaim of an
 * expired lease removes it from there in the same script that puts its jobs back.
 *
 * Each script's KEYS, in the order its comment gives, are made once per queue (batchQueue in batch-settle.ts).
 */

/**
 * Removes ids from the active list. A batch's ids were pushed in one LPUSH, oldest deepest, and nothing but
 * removals happens to them since, so the oldest batch in flight (usually the one completing) is the list's
 * tail: cut off with one LTRIM when both its ends are where they would be (then every id was still there:
 * returns true). Else one LREM each for a few, or one rewrite of the list.
 */
const REMOVE_FROM_ACTIVE = `
local function removeFromActive(activeKey, ids)
  local n = #ids
  if n > 1 and redis.call('LINDEX', activeKey, -1) == ids[1] and redis.call('LINDEX', activeKey, -n) == ids[n] then
    redis.call('LTRIM', activeKey, 0, -n - 1)
    return true
  end
  if n <= 16 then
    for _, id in ipairs(ids) do redis.call('LREM', activeKey, -1, id) end
    return false
  end
  local gone = {}
  for _, id in ipairs(ids) do gone[id] = true end
  local keep = {}
  for _, id in ipairs(redis.call('LRANGE', activeKey, 0, -1)) do
    if not gone[id] then keep[#keep + 1] = id else gone[id] = nil end
  end
  redis.call('DEL', activeKey)
  for i = 1, #keep, 500 do redis.call('RPUSH', activeKey, unpack(keep, i, math.min(i + 499, #keep))) end
  return false
end
`;

/**
 * One job failed for good, as BullMQ leaves a final failure: `finishedOn` and `failedReason` on its hash, the
 * failed set, a `failed` event. The DLQ routing moves it on from the failed set.
 */
const FAIL_FOR_GOOD = `
local function failForGood(failedKey, eventsKey, maxEvents, jk, id, reason, now)
  redis.call('HSET', jk, 'finishedOn', now, 'failedReason', reason)
  redis.call('ZADD', failedKey, now, id)
  redis.call('XADD', eventsKey, 'MAXLEN', '~', maxEvents, '*', 'event', 'failed', 'jobId', id, 'failedReason', reason, 'prev', 'active')
end
`;

/**
 * Takes a batch. KEYS: wait, active, prioritized, events, delayed, meta, marker, batches, batch-ids, pc.
 * ARGV: job key prefix, now (ms), max jobs, batch token, lease (ms), max events.
 * Due delayed jobs are promoted first, as BullMQ's fetch does; then up to `max` ids are taken oldest first
 * from wait, then prioritized. Each job's hash is stamped (processedOn, attemptsStarted) and read; a job
 * whose hash is gone is dropped. Returns {'jobs', JSON [[id, name, data, attemptsMade], ...]}, or
 * {'paused'}, or {'empty', next delayed time in ms or ''}.
 */
export const FETCH_BATCH = defineScript(`
local rcall = redis.call
local prefix, now, max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local due = rcall('ZRANGEBYSCORE', KEYS[5], 0, (now + 1) * 0x1000 - 1, 'LIMIT', 0, 1000)
if #due > 0 then
  rcall('ZREM', KEYS[5], unpack(due))
  for _, id in ipairs(due) do
    local jk = prefix .. id
    local priority = tonumber(rcall('HGET', jk, 'priority')) or 0
    if priority == 0 then
      rcall('LPUSH', KEYS[1], id)
    else
      rcall('ZADD', KEYS[3], priority * 0x100000000 + rcall('INCR', KEYS[10]) % 0x100000000, id)
    end
    rcall('XADD', KEYS[4], 'MAXLEN', '~', ARGV[6], '*', 'event', 'waiting', 'jobId', id, 'prev', 'delayed')
    rcall('HSET', jk, 'delay', 0)
  end
end
if rcall('HEXISTS', KEYS[6], 'paused') == 1 then return {'paused'} end
local ids = rcall('RPOP', KEYS[1], max) or {}
if #ids < max then
  local p = rcall('ZPOPMIN', KEYS[3], max - #ids)
  for i = 1, #p, 2 do ids[#ids + 1] = p[i] end
end
local out, taken = {}, {}
for _, id in ipairs(ids) do
  local jk = prefix .. id
  local f = rcall('HMGET', jk, 'name', 'data', 'atm', 'ats')
  if f[1] then
    rcall('HSET', jk, 'processedOn', now, 'ats', (tonumber(f[4]) or 0) + 1)
    taken[#taken + 1] = id
    out[#out + 1] = {id, f[1], f[2] or '{}', tonumber(f[3]) or 0}
  end
end
if #taken == 0 then
  local nxt = rcall('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
  return {'empty', nxt[2] and tostring(math.floor(tonumber(nxt[2]) / 0x1000)) or ''}
end
for i = 1, #taken, 500 do rcall('LPUSH', KEYS[2], unpack(taken, i, math.min(i + 499, #taken))) end
rcall('ZADD', KEYS[8], now + tonumber(ARGV[5]), ARGV[4])
rcall('HSET', KEYS[9], ARGV[4], cjson.encode(taken))
rcall('XADD', KEYS[4], 'MAXLEN', '~', ARGV[6], '*', 'event', 'batch:active', 'batch', ARGV[4], 'count', #taken)
return {'jobs', cjson.encode(out)}
`);

/**
 * Completes a batch's jobs with its Redis writes, if the batch still holds its lease. KEYS: active, events,
 * completed, batches, batch-ids, then each key the writes name. ARGV: job key prefix, token, now, keep count
 * (0: delete on completion), keep age (ms, 0: no age limit), max events, n, the jobs' attempts made with
 * this one, comma-separated (for kept jobs), the n ids, then each write as its length and words. Returns n
 * (0 for a batch whose jobs the handler all failed alone: its writes are still committed and it ends); or -1
 * with nothing written when the lease was lost; or {'err', message} when a write failed (a wrong type): the
 * writes before it stay applied (Redis has no rollback, as for a `ctx.redisStep`), the jobs are not
 * completed and the batch keeps its lease, for the caller to fail it.
 */
export const COMPLETE_BATCH = defineScript(`
${REMOVE_FROM_ACTIVE}
local rcall = redis.call
local prefix, token, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
if not rcall('ZSCORE', KEYS[4], token) then return -1 end
local n = tonumber(ARGV[7])
local i = 9 + n
while i <= #ARGV do
  local len = tonumber(ARGV[i])
  local r = redis.pcall(unpack(ARGV, i + 1, i + len))
  if type(r) == 'table' and r.err then return {'err', r.err} end
  i = i + len + 1
end
rcall('ZREM', KEYS[4], token)
rcall('HDEL', KEYS[5], token)
local ids = {unpack(ARGV, 9, 8 + n)}
local allThere = removeFromActive(KEYS[1], ids)
local keepCount, keepAge = tonumber(ARGV[4]), tonumber(ARGV[5])
local function deleteJobs(list)
  local keys = {}
  for _, id in ipairs(list) do
    keys[#keys + 1] = prefix .. id
    keys[#keys + 1] = prefix .. id .. ':logs'
  end
  for k = 1, #keys, 500 do rcall('DEL', unpack(keys, k, math.min(k + 499, #keys))) end
end
if keepCount == 0 then
  deleteJobs(ids)
else
  local scored, attempts = {}, {}
  for a in string.gmatch(ARGV[8], '%d+') do attempts[#attempts + 1] = a end
  for k, id in ipairs(ids) do
    local jk = prefix .. id
    -- A job removed while its batch ran (an operator's remove, which takes it off the active list) stays removed.
    if allThere or rcall('EXISTS', jk) == 1 then
      rcall('HSET', jk, 'finishedOn', now, 'returnvalue', 'null', 'atm', attempts[k])
      scored[#scored + 1] = now
      scored[#scored + 1] = id
    end
  end
  for k = 1, #scored, 500 do rcall('ZADD', KEYS[3], unpack(scored, k, math.min(k + 499, #scored))) end
  if keepAge > 0 then
    local old = rcall('ZRANGEBYSCORE', KEYS[3], 0, now - keepAge, 'LIMIT', 0, 1000)
    if #old > 0 then
      deleteJobs(old)
      rcall('ZREM', KEYS[3], unpack(old))
    end
  end
  local excess = rcall('ZCARD', KEYS[3]) - keepCount
  if excess > 0 then
    deleteJobs(rcall('ZRANGE', KEYS[3], 0, excess - 1))
    rcall('ZREMRANGEBYRANK', KEYS[3], 0, excess - 1)
  end
end
rcall('XADD', KEYS[2], 'MAXLEN', '~', ARGV[6], '*', 'event', 'batch:completed', 'batch', token, 'count', n)
return n
`);

/**
 * Settles failed attempts of some of a batch's jobs, if the batch still holds its lease. KEYS: active,
 * events, failed, delayed, wait, marker, batches, batch-ids. ARGV: job key prefix, token, now, max events,
 * release ('1': the batch ends with this call, its lease is dropped), then per job: id, reason, delay (ms;
 * -1 for a final failure). A final failure goes to the failed set (the DLQ routing moves it on); a retry to
 * the delayed set, or back to wait when it has no delay. Returns the number settled, or -1 when the lease
 * was lost (nothing written).
 */
export const FAIL_BATCH = defineScript(`
${REMOVE_FROM_ACTIVE}
${FAIL_FOR_GOOD}
local rcall = redis.call
local prefix, token, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
if not rcall('ZSCORE', KEYS[7], token) then return -1 end
if ARGV[5] == '1' then
  rcall('ZREM', KEYS[7], token)
  rcall('HDEL', KEYS[8], token)
end
local ids, woke = {}, false
for i = 6, #ARGV, 3 do
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
 * Puts back the jobs of batches whose lease expired (their worker died or stopped renewing). KEYS: batches,
 * batch-ids, active, wait, failed, events, marker. ARGV: job key prefix, now, max stalled count, max
 * events. A job still active goes to the head of wait (it runs next), or to the failed set once it has
 * stalled more than the max. Returns {jobs put back, ids failed}.
 */
export const RECLAIM_BATCHES = defineScript(`
${FAIL_FOR_GOOD}
local rcall = redis.call
local prefix, now = ARGV[1], ARGV[2]
local back, failed = 0, {}
for _, token in ipairs(rcall('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 20)) do
  local list = rcall('HGET', KEYS[2], token)
  rcall('ZREM', KEYS[1], token)
  rcall('HDEL', KEYS[2], token)
  if list then
    for _, id in ipairs(cjson.decode(list)) do
      if rcall('LREM', KEYS[3], -1, id) > 0 then
        local jk = prefix .. id
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
if back > 0 then rcall('ZADD', KEYS[7], 0, '0') end
return {back, failed}
`);
