/**
 * The lean acknowledgement: what BullMQ's moveToFinished does for the usual completed job, in about half
 * its Redis calls (ack-fold-lua.ts runs it for compact acknowledgements, BullMQ's own text for the rest).
 *
 * Why: a no-op job costs Redis about 25 calls inside BullMQ's moveToFinished (counted with MONITOR), and
 * at concurrency 50 Redis, not Node, is what a tickwork worker waits on. Most of them are checks for
 * what a plain job does not use (parents, deduplication, metrics, rate limits, a removal policy), or are
 * repeated per job where once per call is the same (the queue's meta, the event stream's trim, the
 * promotion of due delayed jobs, the marker that wakes idle workers).
 *
 * When: a job completed (a compact acknowledgement) that is removed on completion (keepJobs count 0), on a
 * worker without metrics or a rate limiter, on a queue neither paused nor rate limited nor with a global
 * concurrency (its meta, read once per call), whose hash holds no parent and no deduplication id, that has
 * no children (no dependencies or failed-children keys), whose lock is this delivery's, and that is in the
 * active list. For anything else `leanFinish` returns nil having written nothing, and BullMQ's own script
 * runs. Then, as BullMQ's does (BullMQ 6.7.0's moveToFinished, fetchNextJob, prepareJobForProcessing,
 * promoteDelayedJobs, moveJobFromPrioritizedToActive, getNextDelayedTimestamp, removeLock, removeJobKeys,
 * trimEvents; ack-fold-lua.test.ts pins their text, so a BullMQ upgrade that changes them fails there):
 * the job leaves the active list and the stalled set, its lock and keys are deleted, a `completed` event is
 * added; if asked, the next job is fetched: due delayed jobs promoted, one moved from wait (or the
 * prioritized set) to active, locked, stamped (processedOn, processedBy, attempts started), an `active`
 * event added and its hash returned; with none, the next delayed job's time or, with the queue empty, a
 * `drained` event. What differs, none of it observable to BullMQ or its users: the record and attempt
 * counter BullMQ writes into a hash it deletes in the same script are not written; the event stream is
 * trimmed once per call, after its events, and delayed jobs promoted once per call (at its first fetch),
 * rather than per job; the wake-up marker set once per call.
 */
export const LEAN_FINISH_LUA = `
local leanOff = nil
local leanMaxEvents = nil
local leanPromoted = false
local leanMarker = false
local function leanUsable(keys)
  if leanOff == nil then
    local m = redis.call('HMGET', keys[9], 'paused', 'concurrency', 'max', 'duration')
    leanOff = (m[1] or m[2] or m[3] or m[4]) and true or false
  end
  return not leanOff
end
local function leanPromote(keys, prefix, timestamp)
  local jobs = redis.call('ZRANGEBYSCORE', keys[7], 0, (timestamp + 1) * 0x1000 - 1, 'LIMIT', 0, 1000)
  if #jobs == 0 then return end
  redis.call('ZREM', keys[7], unpack(jobs))
  for _, jobId in ipairs(jobs) do
    local jobKey = prefix .. jobId
    local priority = tonumber(redis.call('HGET', jobKey, 'priority')) or 0
    if priority == 0 then
      redis.call('LPUSH', keys[1], jobId)
    else
      local counter = redis.call('INCR', keys[10])
      redis.call('ZADD', keys[3], priority * 0x100000000 + counter % 0x100000000, jobId)
    end
    redis.call('XADD', keys[4], '*', 'event', 'waiting', 'jobId', jobId, 'prev', 'delayed')
    redis.call('HSET', jobKey, 'delay', 0)
  end
  leanMarker = true
end
local function leanPrepare(keys, prefix, jobId, timestamp, opts)
  local jobKey = prefix .. jobId
  redis.call('SET', jobKey .. ':lock', opts['token'], 'PX', opts['lockDuration'])
  redis.call('XADD', keys[4], '*', 'event', 'active', 'jobId', jobId, 'prev', 'waiting')
  if opts['name'] then
    redis.call('HMSET', jobKey, 'processedOn', timestamp, 'pb', opts['name'])
  else
    redis.call('HMSET', jobKey, 'processedOn', timestamp)
  end
  redis.call('HINCRBY', jobKey, 'ats', 1)
  leanMarker = true
  return {redis.call('HGETALL', jobKey), jobId, 0, 0}
end
local function leanFromPrioritized(keys)
  local popped = redis.call('ZPOPMIN', keys[3])
  if #popped > 0 then
    redis.call('LPUSH', keys[2], popped[1])
    return popped[1]
  end
  redis.call('DEL', keys[10])
end
local function leanFetch(keys, prefix, timestamp, opts)
  if not leanPromoted then
    leanPromoted = true
    leanPromote(keys, prefix, timestamp)
  end
  local jobId = redis.call('RPOPLPUSH', keys[1], keys[2])
  if jobId then
    if string.sub(jobId, 1, 2) == '0:' then
      redis.call('LREM', keys[2], 1, jobId)
      if jobId == '0:0' then
        jobId = leanFromPrioritized(keys)
        return leanPrepare(keys, prefix, jobId, timestamp, opts)
      end
    else
      return leanPrepare(keys, prefix, jobId, timestamp, opts)
    end
  else
    jobId = leanFromPrioritized(keys)
    if jobId then return leanPrepare(keys, prefix, jobId, timestamp, opts) end
  end
  local nextDelayed = redis.call('ZRANGE', keys[7], 0, 0, 'WITHSCORES')
  local score = tonumber(nextDelayed[2])
  if score ~= nil then return {0, 0, 0, score / 0x1000} end
end
-- keys, argv: BullMQ's moveToFinished KEYS and ARGV of a compact acknowledgement (its options, argv[8], a table).
-- nil: not for the lean path, nothing written.
local function leanFinish(keys, argv)
  local opts = argv[8]
  local keep = opts['keepJobs']
  if type(keep) ~= 'table' or keep['count'] ~= 0 or opts['maxMetricsSize'] ~= '' or opts['limiter'] ~= nil or opts['token'] == '0' then return nil end
  if not leanUsable(keys) then return nil end
  local jobKey, jobId = keys[12], argv[1]
  local job = redis.call('HMGET', jobKey, 'timestamp', 'parentKey', 'parent', 'deid')
  if not job[1] or job[2] or job[3] or job[4] then return nil end
  if redis.call('EXISTS', jobKey .. ':dependencies', jobKey .. ':unsuccessful') ~= 0 then return nil end
  local lockKey = jobKey .. ':lock'
  if redis.call('GET', lockKey) ~= opts['token'] then return nil end
  if redis.call('LREM', keys[2], -1, jobId) < 1 then return nil end
  redis.call('SREM', keys[5], jobId)
  redis.call('DEL', lockKey, jobKey, jobKey .. ':logs', jobKey .. ':dependencies', jobKey .. ':processed', jobKey .. ':failed', jobKey .. ':unsuccessful')
  redis.call('XADD', keys[4], '*', 'event', 'completed', 'jobId', jobId, argv[3], argv[4], 'prev', 'active')
  if leanMaxEvents == nil then
    leanMaxEvents = redis.call('HGET', keys[9], 'opts.maxLenEvents')
    if not leanMaxEvents then
      leanMaxEvents = 10000
      redis.call('HSET', keys[9], 'opts.maxLenEvents', leanMaxEvents)
    end
  end
  if argv[6] == '1' then
    local next = leanFetch(keys, argv[7], argv[2], opts)
    if next then return next end
  end
  if redis.call('LLEN', keys[1]) == 0 and redis.call('LLEN', keys[2]) == 0 and redis.call('ZCARD', keys[3]) == 0 then
    redis.call('XADD', keys[4], '*', 'event', 'drained')
  end
  return 0
end
-- After every acknowledgement of the call: the stream trimmed and idle workers woken, once.
local function leanAfter(eventsKey, markerKey)
  if leanMaxEvents then redis.call('XTRIM', eventsKey, 'MAXLEN', '~', leanMaxEvents) end
  if leanMarker then redis.call('ZADD', markerKey, 0, '0') end
end
`;
