/**
 * Lua the batch scripts share (batch-lua.ts, batch-lua-leases.ts), and the rules that tie them together.
 *
 * The fast batch store works on BullMQ's own structures of a batch job's queue (wait, active, prioritized,
 * delayed, completed, failed, the events stream and the wake-up marker), so producers, Bull Board, the
 * dashboard and the DLQ see batch jobs as BullMQ jobs. Keys of its own: `batches` (a sorted set, batch
 * token → lease deadline in ms), `batch-ids` (a hash, batch token → the batch's job ids as a JSON array) and
 * `batch-format` (the format of those two: BATCH_FORMAT; a store refuses a queue whose marker says another).
 *
 * A batch is fenced by its lease: every script that settles a batch's jobs first checks that the batch is
 * still in `batches`, and not past its deadline by more than FENCE_LEASES leases; the reclaim of an expired
 * lease removes it from there in the same script that puts its jobs back.
 *
 * A batch's jobs hold no BullMQ lock, so BullMQ's stalled check (moveStalledJobsToWait-9.lua, run by any
 * BullMQ Worker attached to the queue) would move them back to wait while the batch runs: it moves every job
 * it found in active on its previous run whose `<job key>:lock` does not exist. It runs only when its gate,
 * the queue's `stalled-check` key, does not exist (its first line returns otherwise; the run then sets the
 * gate for its own interval). So the fetch of a batch and each renewal hold that gate for HOLD_LEASES leases
 * (HOLD_STALLED_CHECK): while any batch can still settle, no stalled check runs on its queue at all, whatever
 * its interval (fast-batch-store.ts gives the arithmetic). Per batch, not per job: one PTTL (and a SET).
 */

/** The format of `batches` and `batch-ids` these scripts read and write (`batch-format` holds it). */
export const BATCH_FORMAT = '1';

/** BullMQ's stalled check is held off this many leases from a batch's fetch or last renewal. */
export const HOLD_LEASES = 4;

/** A batch this many leases past its deadline can no longer settle (the hold on the stalled check may be near its end). */
export const FENCE_LEASES = 2;

/**
 * Holds BullMQ's stalled check off the queue for `ms` from now at least: its gate, the `stalled-check` key
 * (set with PX as BullMQ sets it), is made to last that long unless it already does.
 */
export const HOLD_STALLED_CHECK = `
local function holdStalledCheck(gateKey, now, ms)
  if redis.call('PTTL', gateKey) < tonumber(ms) then redis.call('SET', gateKey, now, 'PX', ms) end
end
`;

/**
 * Removes ids from the active list. A batch's ids were pushed in one LPUSH, oldest deepest, and nothing but
 * removals happens to them since, so the oldest batch in flight (usually the one completing) is the list's
 * tail: cut off with one LTRIM when both its ends are where they would be (then every id was still there:
 * returns true). Else one LREM each for a few, or one rewrite of the list.
 */
export const REMOVE_FROM_ACTIVE = `
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
 * Completes jobs as the fast store completes a batch's (the caller has taken them off wait or active):
 * deleted with their logs when `keepCount` is 0, else stamped (`finishedOn`, `returnvalue` null, `atm` from
 * `attempts`, by position) and indexed in the completed set, which is then trimmed by `keepAge` (ms, 0 for
 * no limit) and `keepCount`. `verify`: a job whose hash is gone (an operator removed it meanwhile) stays gone.
 */
export const COMPLETE_JOBS = `
local function deleteJobs(prefix, list)
  local keys = {}
  for _, id in ipairs(list) do
    keys[#keys + 1] = prefix .. id
    keys[#keys + 1] = prefix .. id .. ':logs'
  end
  for k = 1, #keys, 500 do redis.call('DEL', unpack(keys, k, math.min(k + 499, #keys))) end
end
local function completeJobs(prefix, completedKey, ids, attempts, now, keepCount, keepAge, verify)
  if keepCount == 0 then return deleteJobs(prefix, ids) end
  local scored = {}
  for k, id in ipairs(ids) do
    local jk = prefix .. id
    if not verify or redis.call('EXISTS', jk) == 1 then
      redis.call('HSET', jk, 'finishedOn', now, 'returnvalue', 'null', 'atm', attempts[k])
      scored[#scored + 1] = now
      scored[#scored + 1] = id
    end
  end
  for k = 1, #scored, 500 do redis.call('ZADD', completedKey, unpack(scored, k, math.min(k + 499, #scored))) end
  if keepAge > 0 then
    local old = redis.call('ZRANGEBYSCORE', completedKey, 0, now - keepAge, 'LIMIT', 0, 1000)
    if #old > 0 then
      deleteJobs(prefix, old)
      redis.call('ZREM', completedKey, unpack(old))
    end
  end
  local excess = redis.call('ZCARD', completedKey) - keepCount
  if excess > 0 then
    deleteJobs(prefix, redis.call('ZRANGE', completedKey, 0, excess - 1))
    redis.call('ZREMRANGEBYRANK', completedKey, 0, excess - 1)
  end
end
`;

/**
 * One job failed for good, as BullMQ leaves a final failure: `finishedOn` and `failedReason` on its hash, the
 * failed set, a `failed` event. The DLQ routing moves it on from the failed set.
 */
export const FAIL_FOR_GOOD = `
local function failForGood(failedKey, eventsKey, maxEvents, jk, id, reason, now)
  redis.call('HSET', jk, 'finishedOn', now, 'failedReason', reason)
  redis.call('ZADD', failedKey, now, id)
  redis.call('XADD', eventsKey, 'MAXLEN', '~', maxEvents, '*', 'event', 'failed', 'jobId', id, 'failedReason', reason, 'prev', 'active')
end
`;

/**
 * Whether batch `token` may still settle: in `batches`, and at most `grace` ms past its deadline (a batch
 * given back has deadline 0, so it never settles).
 */
export const HOLDS_LEASE = `
local function holdsLease(batchesKey, token, now, grace)
  local deadline = redis.call('ZSCORE', batchesKey, token)
  return deadline and now <= tonumber(deadline) + grace
end
`;

/**
 * Applies the writes packed in ARGV from index `i` on (each as its length, then its words), as a
 * `ctx.redisStep`'s are: stops at the first that fails (a wrong type) and returns its message, the writes
 * before it applied (Redis has no rollback). Shared by the fast and the public batch store's commits.
 */
export const APPLY_WRITES = `
local function applyWrites(i)
  while i <= #ARGV do
    local len = tonumber(ARGV[i])
    local r = redis.pcall(unpack(ARGV, i + 1, i + len))
    if type(r) == 'table' and r.err then return r.err end
    i = i + len + 1
  end
end
`;
