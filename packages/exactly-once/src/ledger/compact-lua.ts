/**
 * The ledger's compaction, in Lua fragments that ledger-lua.ts assembles into its scripts (they use its
 * prelude: `now`, `parse`). Why and what: a run with a key of its own keeps a record for its whole window
 * (24 h by default), and a full record costs about 140 bytes and a key; at 1,000 keyed runs a second that
 * is over 11 GiB. So a done record is kept whole only for a short span (`fullRecordMs`), then replaced by
 * its *fingerprint*: 63 bits of the SHA-1 of its record key, an integer member of a small Redis set.
 *
 * Layout, under the record's own base (`<prefix>:ledger-fp`, `<prefix>:{<queue>}:ledger-fp` on a cluster, so
 * every key a script touches shares the record's slot):
 * - `<root>:<window>:s:<bucket>`: a *stage*, a list of the record keys of runs completed in one bucket of
 *   `bucketMs` (written by the completion, one RPUSH); `<root>:stages` (a sorted set) lists the stages by
 *   the end of their bucket, for the sweeper.
 * - `<root>:<window>:<slot>:<depth>:<index>`: fingerprint sets. A window is cut into 12 *slots*; a run done
 *   at time t is in slot floor(t / (window / 12)), and its slot's sets expire at the slot's end plus the
 *   window: every run is remembered at least its window, at most a twelfth longer (about 4% more memory
 *   than exact expiry, for 13 lookups per new run instead of one per run). Within a slot, the fingerprint's
 *   `seed` (32 other bits of the hash) picks one of `width` sets, sized for about 3/4 of Redis's
 *   set-max-intset-entries (512) each; a set never holds more than that, so Redis keeps it as an intset:
 *   8 bytes a member, looked up by binary search. A set that fills up (more runs than the slot was sized
 *   for) sends further members to one of 8 sets a level deeper, and so on.
 * - `<root>:<window>:m`: the slots' shapes, field `<slot>` = width * 8 + depth (one number: the lookup
 *   reads them all for every new run); `<root>:<window>:n`: the runs in each slot (field `<slot>`).
 *
 * The sweeper (compactor.ts; COMPACT_LUA) moves a stage's runs into their slots' sets and deletes their
 * full records in one script per chunk: a duplicate finds either the record or the fingerprint, never
 * neither. Until the sweeper runs, the full record stays (its TTL is the whole window), so compaction saves
 * memory and never costs a suppression. A fingerprint says only "done": a duplicate of a compacted run
 * completes without the original's result.
 *
 * A false positive (a new run taken for a done one) needs its 63-bit fingerprint to equal one of the at most
 * 512 in each of the 13 sets it is checked against: about 13 * 512 / 2^63, 7e-16 per new run.
 */

/**
 * Slots per window (see above): lookups per new run are SLOTS + 1, extra memory about 1 / (2 * SLOTS), and
 * a key is free again at most window / SLOTS after its window. Measured: a new keyed run's claim costs
 * Redis about 31 µs more with 12 live slots, about half that with 6 (for 4% more memory, and keys kept up
 * to 4 h past a 24 h window): 12 keeps the window close.
 */
const SLOTS = 12;
/** How many sets a full one's members spread over, one level deeper. */
const FAN_OUT = 8;
/** Levels below a slot's first sets; past it a full set takes more members (as a hash table: costly but correct). */
const MAX_DEPTH = 6;

/**
 * The fingerprint of a record key: 63 bits of its SHA-1 as a decimal integer (Redis keeps a set of such
 * members as an intset), and 32 more bits as the `seed` that picks its set. Lua numbers are doubles, exact
 * to 2^53: the 63 bits are turned into decimal from four 16-bit limbs, seven digits at a time.
 */
export const FINGERPRINT_LUA = `
local function fingerprint(key)
  local h = redis.sha1hex(key)
  local l = {tonumber(string.sub(h, 1, 4), 16) % 32768, tonumber(string.sub(h, 5, 8), 16), tonumber(string.sub(h, 9, 12), 16), tonumber(string.sub(h, 13, 16), 16)}
  local digits = ''
  local zero
  repeat
    local r = 0
    zero = true
    for i = 1, 4 do
      local v = r * 65536 + l[i]
      l[i] = math.floor(v / 10000000)
      r = v % 10000000
      if l[i] > 0 then zero = false end
    end
    digits = string.format(zero and '%d' or '%07d', r) .. digits
  until zero
  return digits, tonumber(string.sub(h, 17, 24), 16)
end
`;

/**
 * Where a slot's sets are (shared by the lookup and the sweeper): `base` is `<root>:<window>:`, `slot` the
 * slot's field. Lua writes an integral number below 1e14 as digits, so the index is concatenated as it is.
 */
export const SHAPE_LUA = `
local function slotLength(window) return math.ceil(tonumber(window) / ${SLOTS}) end
local function setOf(base, slot, depth, width, seed)
  return base .. slot .. ':' .. depth .. ':' .. seed % (width * ${FAN_OUT} ^ depth)
end
`;

/**
 * Whether the run of record `key` (window `window`) was done and compacted: its fingerprint is in one of
 * the sets of a live slot, at any depth the slot reached. Fingerprinted only if some slot is live.
 */
export const LOOKUP_LUA = `
local function compacted(root, window, key)
  local base = root .. ':' .. window .. ':'
  local shapes = redis.call('HGETALL', base .. 'm')
  if #shapes == 0 then return false end
  local T, W = slotLength(window), tonumber(window)
  local fp, seed = fingerprint(key)
  for i = 1, #shapes, 2 do
    if (tonumber(shapes[i]) + 1) * T + W > now then
      local shape = tonumber(shapes[i + 1])
      local width = math.floor(shape / ${FAN_OUT})
      for d = 0, shape % ${FAN_OUT} do
        if redis.call('SISMEMBER', setOf(base, shapes[i], d, width, seed), fp) == 1 then return true end
      end
    end
  end
  return false
end
`;

/**
 * The completion's part (op d, mode k): the done record `key` is listed in its bucket's stage. One RPUSH;
 * the first of a stage also gives it the window as TTL (the records' own: a stage no sweeper reads goes
 * with them) and lists it in `<root>:stages`.
 */
export const STAGE_LUA = `
local function stageDone(key, root, window, bucketMs)
  local bucket = math.floor(now / tonumber(bucketMs))
  local member = window .. ':s:' .. string.format('%d', bucket)
  local stage = root .. ':' .. member
  if redis.call('RPUSH', stage, key) == 1 then
    redis.call('PEXPIRE', stage, window)
    local stages = root .. ':stages'
    redis.call('ZADD', stages, string.format('%d', (bucket + 1) * tonumber(bucketMs)), member)
    if redis.call('PTTL', stages) < tonumber(window) then redis.call('PEXPIRE', stages, window) end
  end
end
`;

/**
 * The sweeper's script: compacts up to `chunk` runs of the oldest stage whose bucket ended `fullRecordMs`
 * ago. KEYS[1]: `<root>:stages`. ARGV: root, fullRecordMs, bucketMs, chunk, the intset limit
 * (set-max-intset-entries). Replies {runs looked at, runs compacted, 1}; {0, 0, 0} when no stage is due.
 *
 * A record still done is fingerprinted into its slot (by its own completion time) and deleted; one gone
 * (expired: its window passed) or no longer done (it expired and a new run of the key began) is left as
 * it is. A new slot is sized from the runs expected in it: the larger of this stage's rate over the slot
 * and the previous slot's count, about 3/4 of the limit per set.
 */
export const COMPACT_BODY_LUA = `
local root, fullMs, bucketMs, chunk, limit = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now - fullMs), 'LIMIT', 0, 1)
if #due == 0 then return {0, 0, 0} end
local member = due[1]
local window = string.match(member, '^(%d+):s:%d+$')
local stage = root .. ':' .. member
local len = redis.call('LLEN', stage)
if not window or len == 0 then
  redis.call('ZREM', KEYS[1], member)
  return {0, 0, 1}
end
local W, T = tonumber(window), slotLength(window)
local base = root .. ':' .. window .. ':'
local meta, runs = base .. 'm', base .. 'n'
local target = math.floor(limit * 3 / 4)
local shapes, counts = {}, {}

-- A slot's shape, made for a slot seen for the first time (dropping the shapes of slots past their window).
local function shapeOf(slot, s, expireAt)
  local known = shapes[s]
  if known then return known end
  local raw = tonumber(redis.call('HGET', meta, s))
  if raw then
    known = {width = math.floor(raw / ${FAN_OUT}), depth = raw % ${FAN_OUT}}
  else
    local fields = redis.call('HKEYS', meta)
    for i = 1, #fields do
      if (tonumber(fields[i]) + 1) * T + W <= now then redis.call('HDEL', meta, fields[i]) redis.call('HDEL', runs, fields[i]) end
    end
    local previous = tonumber(redis.call('HGET', runs, string.format('%d', slot - 1))) or 0
    local expected = math.max(len * T / bucketMs, previous)
    known = {width = math.max(1, math.ceil(expected / target)), depth = 0}
    redis.call('HSET', meta, s, string.format('%d', known.width * ${FAN_OUT}))
    local ttl = redis.call('PTTL', meta)
    if ttl < 0 or now + ttl < expireAt then redis.call('PEXPIREAT', meta, string.format('%d', expireAt)) end
  end
  shapes[s] = known
  return known
end

local keys = redis.call('LRANGE', stage, 0, chunk - 1)
local compactedRuns = 0
for _, key in ipairs(keys) do
  local state, _, time = parse(redis.call('GET', key))
  if state == 'd' then
    local slot = math.floor(tonumber(time) / T)
    local expireAt = (slot + 1) * T + W
    if expireAt > now then
      local s = string.format('%d', slot)
      local shape = shapeOf(slot, s, expireAt)
      local fp, seed = fingerprint(key)
      local d = 0
      while true do
        local set = setOf(base, s, d, shape.width, seed)
        local n = redis.call('SCARD', set)
        if n < limit or d >= ${MAX_DEPTH} then
          redis.call('SADD', set, fp)
          if n == 0 then redis.call('PEXPIREAT', set, string.format('%d', expireAt)) end
          break
        end
        d = d + 1
        if d > shape.depth then
          shape.depth = d
          redis.call('HSET', meta, s, string.format('%d', shape.width * ${FAN_OUT} + d))
        end
      end
      counts[s] = (counts[s] or 0) + 1
      compactedRuns = compactedRuns + 1
    end
    redis.call('DEL', key)
  end
end
if next(counts) then
  for s, n in pairs(counts) do redis.call('HINCRBY', runs, s, n) end
  redis.call('PEXPIRE', runs, math.max(1, redis.call('PTTL', meta)))
end
if #keys >= len then
  redis.call('DEL', stage)
  redis.call('ZREM', KEYS[1], member)
else
  redis.call('LTRIM', stage, #keys, -1)
end
return {#keys, compactedRuns, 1}
`;
