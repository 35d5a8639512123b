/**
 * The ledger's Lua: the record format, and one script per batch of operations (ledger-batch.ts sends them).
 *
 * A run's record is one string, `<state>|<owner>|<time>|<claims>[|<result>]`:
 * - `r|<owner>|<lease until>|<claims>` running under a lease;
 * - `i||0|<claims>` idle: an attempt failed and gave the run back;
 * - `d|<owner>|<completed at>|<claims>|<encoded result>` done.
 * A string rather than a hash because the common path is then one `SET NX` to claim and one `GET` and
 * `SET` to complete, the cheapest writes Redis has; step results, which most runs never record, live in
 * a hash beside it (`<key>:steps`). The record's TTL is the retention: a run nobody completes is
 * forgotten after it too.
 *
 * Each script runs a batch of operations: entry i runs against KEYS[i]; ARGV holds, per entry, its op
 * code, its argument count and its arguments. Replies, per entry:
 * - claim: 1 for a new run (the common case, kept to one small reply), else {'done', result, completedAt} |
 *   {'busy', msLeftOnLease} | {'claimed', tookOver, stepId1, stepValue1, ...} (a record that existed returns
 *   its recorded steps so a resumed run needs no round trip per step);
 * - renew, step, complete, release: 1, or 0 when the caller no longer owns the running lease (the fence
 *   for every write after the claim); complete also answers 1 when the caller already completed the run
 *   (a batch resent after a reconnect);
 * - any entry that raised: {'error', message}.
 * Lease times come from the Redis server clock (TIME), read once per batch, never from a worker's clock.
 */

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

/** Completion is shared by both scripts below. */
const OP_COMPLETE = `ops.d = function(key, owner, result, retentionMs)
  local state, holder, _, claims = parse(redis.call('GET', key))
  if holder ~= owner then return 0 end
  if state == 'd' then return 1 end
  if state ~= 'r' then return 0 end
  redis.call('SET', key, 'd|' .. owner .. '|' .. string.format('%d', now) .. '|' .. claims .. '|' .. result, 'PX', retentionMs)
  return 1
end

`;

const OPS = `
ops.c = function(key, owner, leaseMs, retentionMs)
  if redis.call('SET', key, running(owner, leaseMs, 1), 'NX', 'PX', retentionMs) then return 1 end
  local state, holder, time, claims, result = parse(redis.call('GET', key))
  if state == 'd' then return {'done', result, time} end
  local tookOver = '0'
  if state == 'r' and holder ~= owner then
    if tonumber(time) > now then return {'busy', string.format('%d', tonumber(time) - now)} end
    tookOver = '1'
  end
  redis.call('SET', key, running(owner, leaseMs, (tonumber(claims) or 0) + 1), 'PX', retentionMs)
  redis.call('PEXPIRE', key .. ':steps', retentionMs)
  local out = {'claimed', tookOver}
  local steps = redis.call('HGETALL', key .. ':steps')
  for i = 1, #steps do out[#out + 1] = steps[i] end
  return out
end

ops.r = function(key, owner, leaseMs)
  local state, holder, _, claims = parse(redis.call('GET', key))
  if state ~= 'r' or holder ~= owner then return 0 end
  redis.call('SET', key, running(owner, leaseMs, claims), 'KEEPTTL')
  return 1
end

-- Steps never outlive their record (a later run under the same key must not find an old run's steps).
ops.s = function(key, owner, id, value)
  local state, holder = parse(redis.call('GET', key))
  if state ~= 'r' or holder ~= owner then return 0 end
  redis.call('HSET', key .. ':steps', id, value)
  redis.call('PEXPIRE', key .. ':steps', redis.call('PTTL', key))
  return 1
end

-- A failed attempt gives the run back at once (keeping its steps) so the retry need not wait for the lease.
ops.x = function(key, owner)
  local state, holder, _, claims = parse(redis.call('GET', key))
  if state ~= 'r' or holder ~= owner then return 0 end
  redis.call('SET', key, 'i||0|' .. claims, 'KEEPTTL')
  return 1
end

`;

/** Every operation: the script of the ledger's own connection. */
export const LEDGER_LUA = `${PRELUDE}local ops = {}\n${OPS}${OP_COMPLETE}${DISPATCH}`;

/**
 * Only `complete`: the script written ahead of a job's acknowledgement on the queue's connection. Small, so
 * it is sent whole (EVAL) rather than by hash: a NOSCRIPT reply would come back only after the
 * acknowledgement had already run.
 */
export const COMPLETE_AHEAD_LUA = `${PRELUDE}local ops = {}\n${OP_COMPLETE}${DISPATCH}`;

/** Parses a run record (the format above) on the Node side, for inspection. */
export function parseRecord(raw: string): { state: 'r' | 'i' | 'd'; owner: string; time: number; claims: number; result: string } | undefined {
  const m = /^([rid])\|([^|]*)\|([^|]*)\|([^|]*)\|?([\s\S]*)$/.exec(raw);
  if (!m) return undefined;
  return { state: m[1] as 'r' | 'i' | 'd', owner: m[2] ?? '', time: Number(m[3]), claims: Number(m[4]), result: m[5] ?? '' };
}
