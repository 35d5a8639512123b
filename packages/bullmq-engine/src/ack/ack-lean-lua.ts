import { bullmqLua } from '../lua/bullmq-includes.js';

/**
 * The lean acknowledgement: what BullMQ's moveToFinished does for the usual completed job, in about half
 * its Redis calls (ack-fold-lua.ts runs it for compact acknowledgements, BullMQ's own text for the rest).
 *
 * Why: a no-op job costs Redis about 25 calls inside BullMQ's moveToFinished (counted with MONITOR), and
 * at concurrency 50 Redis, not Node, is what a tickwork worker waits on. Most of them are checks for
 * what a plain job does not use (parents, deduplication, metrics, rate limits, a removal policy), or are
 * repeated per job where once per call is the same (the queue's meta, the event stream's trim, the
 * promotion of due delayed jobs).
 *
 * When: a job completed (a compact acknowledgement), removed on completion (keepJobs count 0) or kept (a
 * count or an age, as tickwork's default retention keeps 5,000 for a day), on a worker without metrics or a
 * rate limiter, on a queue neither paused nor rate limited nor with a global
 * concurrency (its meta, read once per call), whose hash holds no parent and no deduplication id, that has
 * no children (no dependencies or failed-children keys), and whose lock is this delivery's. For anything
 * else `leanFinish` returns nil having written nothing, and BullMQ's own script runs (and refuses, or
 * finishes the job, as it would have).
 *
 * What BullMQ does, BullMQ's own Lua does: the installed BullMQ's include functions, inlined by bullmqLua
 * (lua/bullmq-includes.ts) from the files it ships, so the steps are always the installed version's:
 * `removeLock` (the lock checked and removed, the job out of the stalled set), `removeJobKeys`,
 * `removeJobsByMaxAge` and `removeJobsByMaxCount` (a kept job's completed set trimmed, with `removeJob`),
 * `promoteDelayedJobs` (due delayed jobs to wait or the prioritized set, their `waiting` events, the
 * wake-up marker), `moveJobFromPrioritizedToActive`, `prepareJobForProcessing` (the next job locked,
 * stamped with processedOn, processedBy and attempts started, its `active` event, the wake-up marker, its
 * hash returned), `getNextDelayedTimestamp`, `trimEvents` and, for a job that holds this delivery's lock but
 * is not active, `updateJobFields` (BullMQ's script writes the job's fields before it refuses that one: -3).
 * What is tickwork's own, written here after BullMQ's moveToFinished and fetchNextJob (their bodies are not
 * includes): when to take the lean path (above); the order of the steps (the job leaves the active list,
 * its keys are deleted, or, kept, its attempt counted and it is added to the completed set with its result
 * and end time; its `completed` event added; if asked, the next job is fetched: from wait, or the
 * prioritized set when wait is empty or holds the old `0:0` marker; with none, the next delayed job's time;
 * then, with the queue empty, a `drained` event); and what is done once per call rather than per job: the
 * queue's meta read, due delayed jobs promoted (at the call's first fetch), kept jobs' completed set
 * trimmed and the event stream trimmed (after the call's events: leanAfter). ack-fold-lua.test.ts pins the text of every BullMQ file this mirrors
 * or includes (contract/scripts.ts, MIRRORED_SCRIPTS), so a BullMQ upgrade that changes one fails there.
 *
 * What differs from BullMQ's script, none of it observable to BullMQ or its users: the record and attempt
 * counter BullMQ writes into a hash it deletes in the same script are not written; the event stream and a
 * kept job's completed set are trimmed once per call, after its acknowledgements (the same set as per-job
 * trims leave, except that an age trim removes at most its `limit`, 1,000 by default, per call rather than
 * per job), and delayed jobs promoted once per call, rather than per job.
 *
 * In the fold's script this text sits at the top level, beside BullMQ's whole moveToFinished wrapped in a
 * function (whose own `rcall` and include functions are local to it): it defines the `rcall` BullMQ's
 * include functions call, and ack-fold-lua.test.ts checks that no name it defines is defined again there.
 */
const LEAN_SOURCE = `local rcall = redis.call
--- @include "includes/removeLock"
--- @include "includes/updateJobFields"
--- @include "includes/removeJobKeys"
--- @include "includes/promoteDelayedJobs"
--- @include "includes/moveJobFromPrioritizedToActive"
--- @include "includes/prepareJobForProcessing"
--- @include "includes/getNextDelayedTimestamp"
--- @include "includes/trimEvents"
--- @include "includes/removeJobsByMaxAge"
--- @include "includes/removeJobsByMaxCount"
local leanOff = nil
local leanUsed = false
local leanPromoted = false
-- The queue neither paused nor rate limited nor with a global concurrency: its meta, read once per call.
local function leanUsable(keys)
  if leanOff == nil then
    local m = rcall('HMGET', keys[9], 'paused', 'concurrency', 'max', 'duration')
    leanOff = (m[1] or m[2] or m[3] or m[4]) and true or false
  end
  return not leanOff
end
-- As fetchNextJob once its queue is known to be neither paused, maxed nor rate limited (no limiter: maxJobs nil).
local function leanPrepare(keys, prefix, jobId, timestamp, opts)
  return prepareJobForProcessing(prefix, keys[6], keys[4], jobId, timestamp, nil, nil, keys[14], opts)
end
local function leanFetch(keys, prefix, timestamp, opts)
  if not leanPromoted then
    leanPromoted = true
    promoteDelayedJobs(keys[7], keys[14], keys[1], keys[3], keys[4], prefix, timestamp, keys[10], false)
  end
  local jobId = rcall('RPOPLPUSH', keys[1], keys[2])
  if jobId then
    if string.sub(jobId, 1, 2) == '0:' then
      rcall('LREM', keys[2], 1, jobId)
      if jobId == '0:0' then
        jobId = moveJobFromPrioritizedToActive(keys[3], keys[2], keys[10])
        return leanPrepare(keys, prefix, jobId, timestamp, opts)
      end
    else
      return leanPrepare(keys, prefix, jobId, timestamp, opts)
    end
  else
    jobId = moveJobFromPrioritizedToActive(keys[3], keys[2], keys[10])
    if jobId then return leanPrepare(keys, prefix, jobId, timestamp, opts) end
  end
  local nextTimestamp = getNextDelayedTimestamp(keys[7])
  if nextTimestamp ~= nil then return {0, 0, 0, nextTimestamp} end
end
-- A kept job's completed set, trimmed once per call (leanAfter) by the keepJobs of the call's latest job
-- there: {set, prefix, keepJobs, timestamp}. A job whose keepJobs differ from the pending trim's has that
-- trim done first, so the set ends as BullMQ's per-job trims leave it.
local leanTrims = {}
local function leanTrim(t)
  if t.keep['age'] ~= nil then removeJobsByMaxAge(t.timestamp, t.keep['age'], t.set, t.prefix, t.keep['limit'] or 1000) end
  if t.keep['count'] ~= nil and t.keep['count'] > 0 then removeJobsByMaxCount(t.keep['count'], t.set, t.prefix) end
end
local function leanTrimLater(set, prefix, keep, timestamp)
  local t = leanTrims[set]
  if t and (t.keep['count'] ~= keep['count'] or t.keep['age'] ~= keep['age'] or t.keep['limit'] ~= keep['limit']) then
    leanTrim(t)
    t = nil
  end
  if t then t.timestamp = timestamp else leanTrims[set] = {set = set, prefix = prefix, keep = keep, timestamp = timestamp} end
end
-- keys, argv: BullMQ's moveToFinished KEYS and ARGV of a compact acknowledgement (its options, argv[8], a table).
-- nil: not for the lean path, nothing written.
local function leanFinish(keys, argv)
  local opts = argv[8]
  local keep = opts['keepJobs']
  if type(keep) ~= 'table' or opts['maxMetricsSize'] ~= '' or opts['limiter'] ~= nil or opts['token'] == '0' then return nil end
  if not leanUsable(keys) then return nil end
  local jobKey, jobId = keys[12], argv[1]
  local job = rcall('HMGET', jobKey, 'timestamp', 'parentKey', 'parent', 'deid')
  if not job[1] or job[2] or job[3] or job[4] then return nil end
  if rcall('EXISTS', jobKey .. ':dependencies', jobKey .. ':unsuccessful') ~= 0 then return nil end
  -- A lock missing or another's: removeLock writes nothing, and BullMQ's script refuses it alike.
  if removeLock(jobKey, keys[5], opts['token'], jobId) < 0 then return nil end
  -- BullMQ's script writes the job's fields first; of a job removed on completion nothing stays to show them.
  local kept = keep['count'] ~= 0
  if kept then updateJobFields(jobKey, argv[9]) end
  if rcall('LREM', keys[2], -1, jobId) < 1 then
    -- Locked by this delivery but not active: BullMQ's script, its lock removed, writes the job's fields and refuses.
    if not kept then updateJobFields(jobKey, argv[9]) end
    return -3
  end
  leanUsed = true
  if kept then
    -- Kept as BullMQ keeps it: its attempt counted, in the completed set with its result and end time.
    rcall('HINCRBY', jobKey, 'atm', 1)
    rcall('ZADD', keys[11], argv[2], jobId)
    rcall('HSET', jobKey, argv[3], argv[4], 'finishedOn', argv[2])
    leanTrimLater(keys[11], argv[7], keep, argv[2])
  else
    removeJobKeys(jobKey)
  end
  rcall('XADD', keys[4], '*', 'event', 'completed', 'jobId', jobId, argv[3], argv[4], 'prev', 'active')
  if argv[6] == '1' then
    local next = leanFetch(keys, argv[7], argv[2], opts)
    if next then return next end
  end
  if rcall('LLEN', keys[1]) == 0 and rcall('LLEN', keys[2]) == 0 and rcall('ZCARD', keys[3]) == 0 then
    rcall('XADD', keys[4], '*', 'event', 'drained')
  end
  return 0
end
-- After every acknowledgement of the call: kept jobs' completed sets trimmed, and the event stream trimmed
-- once, if the lean path added to it.
local function leanAfter(eventsKey, metaKey)
  for _, t in pairs(leanTrims) do leanTrim(t) end
  if leanUsed then trimEvents(metaKey, eventsKey) end
end
`;

let built: string | undefined;

/**
 * The lean path's Lua (leanFinish, leanAfter and what they call), its BullMQ include lines resolved from the
 * installed BullMQ (built once; throws, naming the file, if the installed BullMQ lacks one).
 */
export function leanFinishLua(): string {
  built ??= bullmqLua(LEAN_SOURCE);
  return built;
}
