import { defineScript } from '@tickwork/core';
import { CLAIM_FN_LUA, OVERLAP_ENTER_FN, OVERLAP_LEAVE_FN } from '@tickwork/exactly-once';

/**
 * The schedule store's scripts. Each touches the keys of one shard only (one hash tag), so each is one slot
 * on Redis Cluster; the worker's batch op 'c' (claimStarting), which also claims the run's ledger record
 * and enters its overlap slot, is sent on a single Redis only, as 'e' is. Definitions are
 * `<core JSON>\n<meta JSON array>` (definition.ts): scripts compare cores as strings and read the meta with
 * cjson when they need the version or the pause.
 */

/** Trims a history zset to its cap, deleting the evicted records. */
const TRIM_FN = `
local function trim(hk, rk, cap)
  local excess = redis.call('ZCARD', hk) - cap
  if excess > 0 then
    local old = redis.call('ZRANGE', hk, 0, excess - 1)
    redis.call('ZREMRANGEBYRANK', hk, 0, excess - 1)
    for _, id in ipairs(old) do redis.call('HDEL', rk, id) end
  end
end`;

/**
 * Merges a JSON patch into a history record (JSON null deletes a field), fills defaults, and indexes a new
 * one and trims. keepRun: a patch with an outcome leaves alone a record whose run started (the planner's
 * verdicts, see COMMIT).
 */
export const MERGE_FN = `${TRIM_FN}
local function merge(hk, rk, cap, id, score, patch, defaults, keepRun)
  local cur = redis.call('HGET', rk, id)
  local rec = {}
  if cur then rec = cjson.decode(cur) end
  if keepRun and patch.outcome ~= nil and rec.startedAt ~= nil then return cur end
  for k, v in pairs(patch) do if v == cjson.null then rec[k] = nil else rec[k] = v end end
  for k, v in pairs(defaults) do if rec[k] == nil then rec[k] = v end end
  local json = cjson.encode(rec)
  redis.call('HSET', rk, id, json)
  -- A record that was there is in the index already, at the same score (its nominal time).
  if not cur then
    redis.call('ZADD', hk, score, id)
    trim(hk, rk, cap)
  end
  return json
end`;

/**
 * Compare-and-set of a definition. Only when the stored value is still ARGV[2] ('' = absent) is it replaced
 * by ARGV[3]; the indexes follow. ARGV[4]: the due score, '' = none (exhausted), '-' = leave due and claims
 * as they are (pause). Setting due also drops an in-flight claim, so a dispatcher that claimed the old
 * definition cannot commit over the new one, and clears its not-ahead mark (CLAIM), which named the old
 * due score. ARGV[5] = '1': a (re)created schedule keeps its history for good (a removed one's was set to
 * expire).
 * KEYS: defs, due, claimed, inflight, ids, job index, previous job index, history, records, last-success,
 * last-failure(, notAhead).
 */
export const SET_DEF = defineScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1]) or ''
if cur ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[5], 0, ARGV[1])
if KEYS[7] ~= KEYS[6] then redis.call('ZREM', KEYS[7], ARGV[1]) end
redis.call('ZADD', KEYS[6], 0, ARGV[1])
if ARGV[4] ~= '-' then
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('HDEL', KEYS[4], ARGV[1])
  if KEYS[12] then redis.call('ZREM', KEYS[12], ARGV[1]) end
  if ARGV[4] == '' then redis.call('ZREM', KEYS[2], ARGV[1]) else redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1]) end
end
if ARGV[5] == '1' then
  for i = 8, 11 do redis.call('PERSIST', KEYS[i]) end
end
return 1`);

/**
 * Compare-and-delete of a definition with every index entry.
 * KEYS: defs, due, claimed, inflight, ids, job index, watch, stale, notAhead.
 */
export const DELETE_DEF = defineScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1]) or ''
if cur ~= ARGV[2] or cur == '' then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
for i = 2, 9 do
  if i == 4 then redis.call('HDEL', KEYS[i], ARGV[1]) else redis.call('ZREM', KEYS[i], ARGV[1]) end
end
return 1`);

/**
 * CLAIM: expired leases first (their dispatcher died between claim and commit: its lease ran out, or a live
 * scheduler released it, RELEASE_CLAIMS), then due entries with a score up to ARGV[2] (now + look-ahead), at
 * most ARGV[3] in all. Each moves to `claimed` with the lease deadline ARGV[4]; `inflight` keeps its nominal
 * and the lease token ARGV[5]. Entries whose definition is gone are dropped. Adding ahead (ARGV[6], the
 * add-ahead horizon; absent: none), while the batch has room, then entries with a score after ARGV[2] up to
 * ARGV[6], among the first ARGV[7] there, except one that `notAhead` (KEYS[5]) holds at its very score: a
 * claim ahead found that schedule too frequent to add ahead (dispatch/plan-claim.ts), so it waits for the
 * look-ahead. Returns how many of the entries were taken over (they come first), then flat (id, nominal,
 * definition) triples.
 * KEYS: due, claimed, inflight, defs(, notAhead). ARGV: now, horizon, batch, lease deadline, token(, add-ahead
 * horizon, add-ahead scan).
 */
export const CLAIM = defineScript(`
local out = {}
local batch = tonumber(ARGV[3])
local taken = 0
-- One entry claimed under this lease, and returned.
local function hold(id, nominal, def)
  redis.call('ZADD', KEYS[2], ARGV[4], id)
  redis.call('HSET', KEYS[3], id, nominal .. ':' .. ARGV[5])
  out[#out + 1] = id
  out[#out + 1] = nominal
  out[#out + 1] = def
  taken = taken + 1
end
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, batch)
for _, id in ipairs(expired) do
  local inf = redis.call('HGET', KEYS[3], id)
  local def = redis.call('HGET', KEYS[4], id)
  if inf and def then
    hold(id, string.match(inf, '^([^:]+)'), def)
  else
    redis.call('ZREM', KEYS[2], id)
    redis.call('HDEL', KEYS[3], id)
  end
end
local n = taken
-- A due entry claimed, or dropped when its definition is gone.
local function take(id, nominal)
  redis.call('ZREM', KEYS[1], id)
  local def = redis.call('HGET', KEYS[4], id)
  if def then hold(id, nominal, def) end
end
if taken < batch then
  local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[2], 'WITHSCORES', 'LIMIT', 0, batch - taken)
  for i = 1, #due, 2 do take(due[i], due[i + 1]) end
end
if ARGV[6] and taken < batch then
  local ahead = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[2], ARGV[6], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[7]))
  for i = 1, #ahead, 2 do
    if taken >= batch then break end
    if redis.call('ZSCORE', KEYS[5], ahead[i]) ~= ahead[i + 1] then take(ahead[i], ahead[i + 1]) end
  end
end
table.insert(out, 1, n)
return out`);

/**
 * RELEASE_CLAIMS: the claims of scheduler replicas that stopped beating (dispatch/takeover.ts) expire now, so
 * the next CLAIM, by any replica, takes them over first. A claim is a dead replica's when its lease token
 * (`<replica>.<seq>`, after the nominal in `inflight`) starts with one of ARGV's replica ids. Its token stays:
 * should that replica only have been frozen, its late COMMIT still lands until another claims the entry, and
 * is refused after. Already expired claims are not looked at. Returns how many it released.
 * KEYS: claimed, inflight. ARGV: replica ids.
 */
export const RELEASE_CLAIMS = defineScript(`
local dead = {}
for i = 1, #ARGV do dead[ARGV[i]] = true end
local n = 0
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(0', '+inf')) do
  local inf = redis.call('HGET', KEYS[2], id)
  local replica = inf and string.match(inf, '^[^:]*:([^.]*)%.')
  if replica and dead[replica] then
    redis.call('ZADD', KEYS[1], 0, id)
    n = n + 1
  end
end
return n`);

/**
 * COMMIT of one shard's claims, each only while it is still held under this lease token (ARGV[1]): an
 * upsert, pause/resume or remove since the claim dropped it, and that writer's state stands. For each
 * commit: the next due score, the watchdog's first deadline (NX) and the occurrences' history records.
 * A planner's verdict (a patch with an outcome: missed, skipped-paused) never overwrites the record of a run
 * that started: after a claimer died between adding its runs and committing, the replica that takes over
 * re-plans the same occurrences later than they were due, and may judge missed one that ran.
 * A commit marked not-ahead (a claim ahead of a schedule too frequent to add ahead, which puts back its own
 * nominal) also enters `notAhead` at that score, so that claims ahead skip it until the look-ahead takes it.
 * KEYS: due, claimed, inflight, watch, notAhead, then per commit its history and records keys.
 * ARGV: token, commits, then per commit: id, next ('' = none), watch deadline ('' = none), key index,
 * history cap, not-ahead ('1' or ''), record count, then per record: id, score, patch JSON, defaults JSON.
 */
export const COMMIT = defineScript(`${MERGE_FN}
local token = ':' .. ARGV[1]
local i = 3
local committed = 0
for c = 1, tonumber(ARGV[2]) do
  local id, nxt, wd, k, cap, notAhead, nrec = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4]), ARGV[i + 5], tonumber(ARGV[i + 6])
  i = i + 7
  local inf = redis.call('HGET', KEYS[3], id)
  local held = inf and string.sub(inf, -#token) == token
  if held then
    redis.call('HDEL', KEYS[3], id)
    redis.call('ZREM', KEYS[2], id)
    if nxt ~= '' then redis.call('ZADD', KEYS[1], nxt, id) end
    if wd ~= '' then redis.call('ZADD', KEYS[4], 'NX', wd, id) end
    if notAhead == '1' then redis.call('ZADD', KEYS[5], nxt, id) end
    committed = committed + 1
  end
  for r = 1, nrec do
    if held then merge(KEYS[k], KEYS[k + 1], cap, ARGV[i], ARGV[i + 1], cjson.decode(ARGV[i + 2]), cjson.decode(ARGV[i + 3]), true) end
    i = i + 4
  end
end
return committed`);

/**
 * A run's history writes as functions of their own keys and arguments (K, A), so that the worker's batches
 * (HISTORY_BATCH) run many runs' in one call, and each single script below runs one.
 *
 * mergeRecord: merges into one history record; optionally copies it to a last-success/failure key, removes
 * the run from the slow-run index and frees the run's overlap slot (a run's end record: OVERLAP_LEAVE_FN).
 * K: history, records, then in this order the ones used: last, running, overlap slot. A: cap, id, score,
 * patch, defaults, copy ('1' = a last key), running member ('' = none), overlap holder ('' = none), quiet
 * ('1': returns whether it freed the slot, 0 or 1, rather than the record).
 */
const MERGE_RECORD_FN = `
local function mergeRecord(K, A)
  local json = merge(K[1], K[2], tonumber(A[1]), A[2], A[3], cjson.decode(A[4]), cjson.decode(A[5]))
  local next = 3
  if A[6] == '1' then
    redis.call('SET', K[3], json)
    next = 4
  end
  if A[7] ~= '' then
    redis.call('ZREM', K[next], A[7])
    next = next + 1
  end
  local left = 0
  if A[8] ~= nil and A[8] ~= '' then left = overlapLeave(K[next], A[8]) end
  if A[9] == '1' then return left end
  return json
end`;

/** mergeRecord as a script of its own (KEYS and ARGV as K and A above). */
export const MERGE_RECORD = defineScript(`${MERGE_FN}${OVERLAP_LEAVE_FN}${MERGE_RECORD_FN}
return mergeRecord(KEYS, ARGV)`);

/**
 * The worker's start of a scheduled run, with its gate in the same script (the definition shares the
 * history's slot, so the check costs no extra round trip): the run is skipped when its schedule is gone
 * ('removed'), was changed since the occurrence was planned ('changed'), or is paused since before the
 * occurrence's nominal time ('paused'); else 'ok', and a watched run enters the slow-run index.
 * startRun returns the verdict. K: history, records, defs, running. A: cap, id, score, patch ('': the start
 * is not recorded here, the worker writes it with the run's next record), defaults, schedule id, version
 * ('' = no gate), nominal ms, slow deadline ('' = not watched), end time ISO.
 *
 * startEntering: startRun with the run's overlap entry (OVERLAP_ENTER_FN) in the same call, on a single
 * Redis (on a cluster the overlap slot is under the schedule's own tag, not the shard's). The gate comes
 * first: a run it refuses is recorded and does not enter. Then the entry: an occurrence that must wait or
 * is skipped gets no start record (the caller records a skip, as after the guard's own enter). Returns
 * {verdict} ('ok': entered and started), {'wait'} or {'skip', running key}. K: startRun's, then the overlap
 * slot and skip list. A: startRun's 10, then overlapEnter's 7.
 */
const START_FN = `
local function gate(defs, schedule, version, nominal)
  if version == '' then return 'ok' end
  local def = redis.call('HGET', defs, schedule)
  if not def then return 'removed' end
  local nl = string.find(def, '\\n', 1, true)
  local meta = cjson.decode(string.sub(def, nl + 1))
  if tostring(meta[1]) ~= version then return 'changed' end
  if meta[4] ~= nil and meta[4] ~= cjson.null and tonumber(nominal) >= tonumber(meta[4]) then return 'paused' end
  return 'ok'
end
local function startRecord(K, A, verdict)
  local patch
  if verdict ~= 'ok' then
    patch = { endedAt = A[10], outcome = 'skipped-' .. verdict }
  else
    if A[9] ~= '' then redis.call('ZADD', K[4], A[9], A[2]) end
    if A[4] == '' then return end
    patch = cjson.decode(A[4])
  end
  merge(K[1], K[2], tonumber(A[1]), A[2], A[3], patch, cjson.decode(A[5]))
end
local function startRun(K, A)
  local verdict = gate(K[3], A[6], A[7], A[8])
  startRecord(K, A, verdict)
  return verdict
end
local function startEntering(K, A)
  local verdict = gate(K[3], A[6], A[7], A[8])
  if verdict == 'ok' then
    local entered = overlapEnter(K[5], K[6], A[11], A[12], A[13], A[14], A[15], A[16], A[17])
    if entered[1] ~= 'run' then return entered end
  end
  startRecord(K, A, verdict)
  return {verdict}
end`;

/**
 * claimStarting: a run's ledger claim (CLAIM_FN_LUA's ledgerClaim) and, when it claims a new run, its start
 * (startRun, or startEntering with its overlap entry) in the same call, on a single Redis: one round trip
 * where the claim and the start took one each. A claim that finds the run done, held, taken over or with
 * recorded steps starts nothing: it returns {'claim', the claim's reply}, and the worker goes on as after a
 * claim of the ledger's own (its start record follows in a call of its own). Else the start's reply: startRun's
 * verdict as {verdict}, or startEntering's. K: the run's record key, then the start's keys. A: 's' or 'e',
 * the claim's argument count, its arguments, then the start's.
 */
const CLAIM_START_FN = `
local function claimStarting(K, A)
  local nc = tonumber(A[2])
  local claimed = ledgerClaim(K[1], unpack(A, 3, 2 + nc))
  if claimed ~= 1 then return {'claim', claimed} end
  local S, SA = {unpack(K, 2)}, {unpack(A, 3 + nc)}
  if A[1] == 'e' then return startEntering(S, SA) end
  return {startRun(S, SA)}
end`;

/**
 * The worker's history writes of many runs in one call (@tickwork/core ScriptBatcher): per entry its code
 * ('s' startRun, 'e' startEntering, 'm' mergeRecord, 'c' claimStarting), key count, argument count, then
 * its arguments; its keys in order in KEYS (on a cluster, one shard's: one slot). Each entry runs under
 * pcall, so a failed one fails its own caller alone ({'error', message}). Returns one reply per entry.
 */
export const HISTORY_BATCH = defineScript(`${CLAIM_FN_LUA}${MERGE_FN}${OVERLAP_ENTER_FN}${OVERLAP_LEAVE_FN}${MERGE_RECORD_FN}${START_FN}${CLAIM_START_FN}
local ops = { s = startRun, e = startEntering, m = mergeRecord, c = claimStarting }
local replies = {}
local a, k, i = 1, 1, 1
while a <= #ARGV do
  local op, nk, na = ops[ARGV[a]], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local K = {unpack(KEYS, k, k + nk - 1)}
  local A = {unpack(ARGV, a + 3, a + 2 + na)}
  k = k + nk
  a = a + 3 + na
  local ok, reply = pcall(op, K, A)
  if ok then
    replies[i] = reply
  else
    replies[i] = {'error', type(reply) == 'table' and tostring(reply.err) or tostring(reply)}
  end
  i = i + 1
end
return replies`);
