import { COMPACT_BODY_LUA, FINGERPRINT_LUA, LOOKUP_LUA, SHAPE_LUA, STAGE_LUA } from './compact-lua.js';

/**
 * The ledger's Lua: the record format, and one script per batch of operations (ledger-batch.ts sends them).
 *
 * A run's record is one string, `<state>|<owner>|<time>|<claims>[|<result>]`:
 * - `r|<owner>|<lease until>|<claims>` running under a lease;
 * - `i||0|<claims>` idle: an attempt failed and gave the run back;
 * - `d|<owner>|<completed at>|<claims>|<encoded result>` done.
 *
 * Where the record lives is the run's *place* (see README, "How long duplicates are suppressed"):
 * - mode `k`: its own string key `<prefix>:ledger:<idempotency key>`, for runs with an explicit key (an
 *   `idempotencyKey`, a scheduled occurrence, a re-drive). While unfinished it lives `unfinishedTtl`; once
 *   done, the run's dedupe window, unless the sweeper compacts it first into a fingerprint (compact-lua.ts):
 *   a claim that creates a record looks the run's fingerprint up before it goes on.
 * - mode `j`: the field `tw` of the BullMQ job's own hash, for runs named by their job id. BullMQ can only
 *   deliver that job again (a stall, an operator's retry) while it keeps the job, and refuses a re-add of
 *   the id while it keeps it; the record lives exactly that long and costs no key of its own.
 * Step results live in a hash `<prefix>:ledger:<idempotency key>:steps` in both modes (so a re-driven run,
 * whose job id is new, still finds them), kept `unfinishedTtl` from the last write and deleted when the
 * run completes: a done run is never resumed, so its steps are never read again.
 *
 * Each script runs a batch of operations: entry i runs against KEYS[i] (the record's key); ARGV holds, per
 * entry, its op code, its argument count and its arguments (the first is the mode). Replies, per entry:
 * - claim: 1 for a new run with no recorded steps (the common case, kept to one small reply), else
 *   {'done', result, completedAt} | {'done', '', '', 'c'} (compacted) | {'busy', msLeftOnLease, holder} | {'claimed', tookOver, stepId1, stepValue1, ...}
 *   (returning recorded steps so a resumed run needs no round trip per step);
 * - complete-unclaimed (f): see the op;
 * - renew, step, complete, release: 1, or 0 when the caller no longer owns the running lease (the fence
 *   for every write after the claim); complete also answers 1 when the caller already completed the run
 *   (a batch resent after a reconnect);
 * - any entry that raised: {'error', message}.
 * Lease times come from the Redis server clock (TIME), read once per batch, never from a worker's clock.
 */

/**
 * The field of a BullMQ job's hash that holds its run's record (mode j). One name for the scripts below,
 * the ledger's reads, and the worker's check of a delivered job's hash (apps/worker sole-delivery.ts).
 */
export const JOB_RECORD_FIELD = 'tw';

const PRELUDE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function parse(v)
  if not v then return nil end
  return string.match(v, '^(%a)|([^|]*)|([^|]*)|([^|]*)|?(.*)$')
end

local function running(owner, leaseMs, claims)
  return 'r|' .. owner .. '|' .. string.format('%d', now + tonumber(leaseMs)) .. '|' .. claims
end

-- The record of a run: a string key (mode k) or a field of its BullMQ job's hash (mode j, JOB_RECORD_FIELD).
local function rget(mode, key)
  if mode == 'j' then return redis.call('HGET', key, '${JOB_RECORD_FIELD}') end
  return redis.call('GET', key)
end

-- ttl: ms, or nil to keep the key's TTL. A job's hash has no TTL of ours: BullMQ removes it.
local function rput(mode, key, v, ttl)
  if mode == 'j' then
    redis.call('HSET', key, '${JOB_RECORD_FIELD}', v)
  elseif ttl then
    redis.call('SET', key, v, 'PX', ttl)
  else
    redis.call('SET', key, v, 'KEEPTTL')
  end
end

`;

const DISPATCH = `local replies = {}
local a = 1
for i = 1, #KEYS do
  local op = ops[ARGV[a]]
  local n = tonumber(ARGV[a + 1])
  local ok, reply = pcall(op, KEYS[i], unpack(ARGV, a + 2, a + 1 + n))
  a = a + 2 + n
  if ok then
    replies[i] = reply
  else
    replies[i] = {'error', type(reply) == 'table' and tostring(reply.err) or tostring(reply)}
  end
end
return replies
`;

/**
 * Completion is shared by both scripts below. `fpRoot` and `bucketMs` (mode k, a window long enough to
 * compact; absent or '' otherwise): the done record is listed in its stage for the sweeper (compact-lua.ts).
 * Its TTL is still the whole window, so a record no sweeper compacts suppresses duplicates as long.
 */
const OP_COMPLETE = `${STAGE_LUA}
ops.d = function(key, mode, owner, result, doneTtl, stepsKey, fpRoot, bucketMs)
  local state, holder, _, claims = parse(rget(mode, key))
  if holder ~= owner then return 0 end
  if state == 'd' then return 1 end
  if state ~= 'r' then return 0 end
  rput(mode, key, 'd|' .. owner .. '|' .. string.format('%d', now) .. '|' .. claims .. '|' .. result, doneTtl)
  redis.call('DEL', stepsKey)
  if fpRoot and fpRoot ~= '' then stageDone(key, fpRoot, doneTtl, bucketMs) end
  return 1
end

-- Completes a run that was never claimed (a lazily claimed run whose handler made no effect: see
-- lazy-run.ts); mode j only. ack-ride.ts writes the same record (unclaimedDoneRecord). 1 recorded (or
-- recorded by this owner already: the same call sent again); 2 a duplicate delivery completed the run
-- first (kept as it is); 0 another delivery holds it, or the job is gone (a job's hash is never recreated
-- for its record).
ops.f = function(key, mode, owner, result)
  if redis.call('EXISTS', key) == 0 then return 0 end
  if redis.call('HSETNX', key, '${JOB_RECORD_FIELD}', 'd|' .. owner .. '|' .. string.format('%d', now) .. '|1|' .. result) == 1 then return 1 end
  local state, holder = parse(rget(mode, key))
  if state == 'd' then return holder == owner and 1 or 2 end
  return 0
end

`;

/**
 * The claim (op `c`) as a function of its own, `ledgerClaim(key, mode, owner, leaseMs, unfinishedTtl,
 * stepsKey, fpRoot, window, deadHolder)`, so a script of another package can claim a run in its own call
 * (CLAIM_FN_LUA: the schedules' history claims a scheduled run with its start record). Same reply as op `c`.
 */
const CLAIM_FN = `
local function withSteps(out, stepsKey, unfinishedTtl)
  local steps = redis.call('HGETALL', stepsKey)
  if #steps == 0 then return out end
  redis.call('PEXPIRE', stepsKey, unfinishedTtl)
  for i = 1, #steps do out[#out + 1] = steps[i] end
  return out
end

-- deadHolder (optional): an owner whose process the worker registry reports dead (recovery/); its live
-- lease is taken over as if expired. Compared to the record's holder here, so the takeover is a CAS.
-- fpRoot, window (mode k, a window long enough to compact; else ''): a new record is first looked up among
-- the compacted runs (compact-lua.ts); a run found there is done, without its result ({'done', '', '', 'c'}).
local function ledgerClaim(key, mode, owner, leaseMs, unfinishedTtl, stepsKey, fpRoot, window, deadHolder)
  local fresh
  if mode == 'j' then
    if redis.call('EXISTS', key) == 0 then error('the job is gone from its queue (removed while it was being processed)') end
    fresh = redis.call('HSETNX', key, '${JOB_RECORD_FIELD}', running(owner, leaseMs, 1)) == 1
  else
    fresh = redis.call('SET', key, running(owner, leaseMs, 1), 'NX', 'PX', unfinishedTtl)
  end
  if fresh then
    if fpRoot ~= '' and compacted(fpRoot, window, key) then
      redis.call('DEL', key)
      return {'done', '', '', 'c'}
    end
    -- A new record under its own key may still find steps: a re-driven run (new job id) resumes its
    -- original run's steps. A new record in a job's hash cannot: no earlier delivery of that job claimed it.
    if mode == 'j' or redis.call('EXISTS', stepsKey) == 0 then return 1 end
    return withSteps({'claimed', '0'}, stepsKey, unfinishedTtl)
  end
  local state, holder, time, claims, result = parse(rget(mode, key))
  if state == 'd' then return {'done', result, time} end
  local tookOver = '0'
  if state == 'r' and holder ~= owner then
    if tonumber(time) > now and holder ~= deadHolder then return {'busy', string.format('%d', tonumber(time) - now), holder} end
    tookOver = '1'
  end
  rput(mode, key, running(owner, leaseMs, (tonumber(claims) or 0) + 1), unfinishedTtl)
  return withSteps({'claimed', tookOver}, stepsKey, unfinishedTtl)
end

`;

const OPS = `
ops.c = ledgerClaim

ops.r = function(key, mode, owner, leaseMs)
  local state, holder, _, claims = parse(rget(mode, key))
  if state ~= 'r' or holder ~= owner then return 0 end
  rput(mode, key, running(owner, leaseMs, claims), nil)
  return 1
end

ops.s = function(key, mode, owner, id, value, stepsKey, unfinishedTtl)
  local state, holder = parse(rget(mode, key))
  if state ~= 'r' or holder ~= owner then return 0 end
  redis.call('HSET', stepsKey, id, value)
  redis.call('PEXPIRE', stepsKey, unfinishedTtl)
  return 1
end

-- A failed attempt gives the run back at once (keeping its steps) so the retry need not wait for the lease.
ops.x = function(key, mode, owner)
  local state, holder, _, claims = parse(rget(mode, key))
  if state ~= 'r' or holder ~= owner then return 0 end
  rput(mode, key, 'i||0|' .. claims, nil)
  return 1
end

`;

/** Every operation: the script of the ledger's own connection. */

export const LEDGER_LUA = `${PRELUDE}${FINGERPRINT_LUA}${SHAPE_LUA}${LOOKUP_LUA}${CLAIM_FN}local ops = {}\n${OPS}${OP_COMPLETE}${DISPATCH}`;

/**
 * The claim alone, as `ledgerClaim` (CLAIM_FN above) with what it needs (the clock, the record format, the
 * lookup among compacted runs), for another package's script to include at its top. Its top-level names
 * (`now`, `parse`, `running`, ...) are locals of the including script: names it defines after shadow
 * them for its own code only.
 */
export const CLAIM_FN_LUA = `${PRELUDE}${FINGERPRINT_LUA}${SHAPE_LUA}${LOOKUP_LUA}${CLAIM_FN}`;

/** The sweeper's script (compactor.ts): see COMPACT_BODY_LUA. */
export const COMPACT_LUA = `${PRELUDE}${FINGERPRINT_LUA}${SHAPE_LUA}${COMPACT_BODY_LUA}`;

/** Whether a run was compacted (IdempotencyLedger.inspect): KEYS[1] its record, ARGV its fpRoot and window; 1 or 0. */
export const COMPACTED_LUA = `${PRELUDE}${FINGERPRINT_LUA}${SHAPE_LUA}${LOOKUP_LUA}return compacted(ARGV[1], ARGV[2], KEYS[1]) and 1 or 0`;

/**
 * Only the completions (`complete`, and `complete-unclaimed` for a run that made no effect): the script
 * written ahead of a job's acknowledgement on the queue's connection (CompletionWriter: by hash, after a
 * SCRIPT LOAD on that connection).
 */
export const COMPLETE_AHEAD_LUA = `${PRELUDE}local ops = {}\n${OP_COMPLETE}${DISPATCH}`;

/** The prelude and the completion op (`ops.d`) without a dispatch: the acknowledgements' script builds on it (ack-fold-lua.ts). */
export const COMPLETE_OP_LUA = `${PRELUDE}local ops = {}\n${OP_COMPLETE}`;

/**
 * The tail both Redis-step scripts share: applies the step's writes (ARGV from 6 on: a count, then that
 * many command words, repeated), records the step (KEYS[2], field ARGV[3] = ARGV[4], TTL ARGV[5]), replies 1.
 * A step already recorded is not applied again (replies 1): the same call can arrive twice, when a client
 * sends it again after its connection died before the reply (ioredis does, to a promoted replica that had
 * already received the first call's writes), and the writes must happen once.
 */
const COMMIT_STEP_WRITES = `if redis.call('HEXISTS', KEYS[2], ARGV[3]) == 1 then return 1 end
local a = 6
while a <= #ARGV do
  local n = tonumber(ARGV[a])
  redis.call(unpack(ARGV, a + 1, a + n))
  a = a + n + 1
end
redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return 1
`;

/**
 * A Redis step (redis-tx.ts): the step's writes and its record in one script, only while `owner` holds the
 * run. KEYS: record, steps, then the keys the writes touch (declared, as scripts must). ARGV: mode, owner,
 * step id, encoded result, unfinished TTL, then per write its argument count and its arguments. Replies 1
 * (committed) or 0 (the run is no longer this delivery's: nothing was written). Redis has no rollback: a
 * write that fails at run time (a wrong type) fails the step after the writes before it were applied.
 */
export const TX_STEP_LUA = `${PRELUDE}
local state, holder = parse(rget(ARGV[1], KEYS[1]))
if state ~= 'r' or holder ~= ARGV[2] then return 0 end
${COMMIT_STEP_WRITES}`;

/**
 * A lazily claimed run's first Redis step (lazy-run.ts): claims the run in its job's hash (mode j) and
 * commits the step's writes and record, in one script, when the run is new. KEYS: the job's hash, steps,
 * then the keys the writes touch. ARGV: owner, lease ms, step id, encoded result, unfinished TTL, then the
 * writes as in TX_STEP_LUA. Replies 1 (claimed and committed) or 2 (not new, or the job is gone: nothing
 * was written; the caller claims the usual way, which answers every other case).
 */
export const CLAIM_TX_STEP_LUA = `${PRELUDE}
if redis.call('EXISTS', KEYS[1]) == 0 then return 2 end
if redis.call('HSETNX', KEYS[1], '${JOB_RECORD_FIELD}', running(ARGV[1], ARGV[2], 1)) == 0 then return 2 end
${COMMIT_STEP_WRITES}`;

/** Parses a run record (the format above) on the Node side, for inspection. */
export function parseLedgerRecord(raw: string): { state: 'r' | 'i' | 'd'; owner: string; time: number; claims: number; result: string } | undefined {
  const m = /^([rid])\|([^|]*)\|([^|]*)\|([^|]*)\|?([\s\S]*)$/.exec(raw);
  if (!m) return undefined;
  return { state: m[1] as 'r' | 'i' | 'd', owner: m[2] ?? '', time: Number(m[3]), claims: Number(m[4]), result: m[5] ?? '' };
}

/** A done record of a run never claimed, as op `f` writes it in Lua: one claim, completed `at` (ms). */
export function unclaimedDoneRecord(owner: string, at: number | string, encodedResult: string): string {
  return `d|${owner}|${at}|1|${encodedResult}`;
}
