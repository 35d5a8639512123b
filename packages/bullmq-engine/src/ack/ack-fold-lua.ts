import { unpack } from 'msgpackr';
import { leanFinishLua } from './ack-lean-lua.js';
import { AckOptions, OPTIONS_INDEX, withoutNulls } from './ack-options.js';
import { recordField, recordPair, RIDE_FIELDS_INDEX } from './ack-ride.js';
import { COMPLETE_OP_LUA, JOB_RECORD_FIELD } from '@tickwork/exactly-once';
import { HAS_RECORD, MOVE_TO_FINISHED_AT, MOVE_TO_FINISHED_KEYS, REFUSED_UNWRITTEN, RIDE_CLAIMED_OP, RIDE_OP, RIDE_SOLE_OP } from './ack-constants.js';
import { LedgerCallError, OP_CODES, type AheadOp } from '@tickwork/exactly-once';

/**
 * The acknowledgements' script (ack-fold.ts sends it) and the words of one call of it.
 *
 * A batch of BullMQ acknowledgements, each with the completion of its run if it has one: per
 * acknowledgement, the completion runs first, as it would written ahead, then BullMQ's moveToFinished
 * script, unchanged, as a function called with that acknowledgement's own KEYS and ARGV.
 *
 * **Two shapes of acknowledgement.** A *verbose* one is BullMQ's KEYS and ARGV as BullMQ made them. A
 * *compact* one (a job completed, the usual case) is the same acknowledgement in one word: BullMQ's
 * KEYS but the job's are the same for every job of a queue, so the call carries them once (SHARED_KEYS)
 * with the queue's key prefix; its options but the token are the same for every job of a kind, so the call
 * carries each distinct set once, as JSON rather than msgpack; and each compact acknowledgement is a JSON
 * array of its job's key, timestamp, return value and whether to fetch the next job (as BullMQ sends them:
 * text), its token, which options are its (their place among the call's, from 1) and, for a riding record,
 * the job fields BullMQ sets (ARGV[9]) as a pair.
 * Why: BullMQ's options are a Buffer, and a Buffer anywhere in a command makes ioredis encode every word of
 * it as a Buffer; a call of four acknowledgements, 100 words, cost about 10 µs of Node CPU per
 * acknowledgement that way, 2.2 µs compact, all text (measured with ioredis's Command on this machine);
 * the options, about 190 bytes of JSON per job, and ioredis's cost per word were most of what was left.
 * The script rebuilds BullMQ's KEYS and ARGV from them, so BullMQ's text runs with the same values either
 * way; its `cmsgpack.unpack` of ARGV[8] and ARGV[9] is given a stand-in that returns a table as it is (a compact
 * acknowledgement's options, decoded once per call, its token set in them before its turn), decodes JSON
 * (which starts with `{` or `[`, never a msgpack map or array) and passes msgpack on. Nothing in BullMQ's
 * script or the lean path writes into the options table or keeps it beyond its job's turn.
 *
 * KEYS: if any acknowledgement is compact, first the SHARED_KEYS (BullMQ's KEYS 1–11, 13 and 14); then
 * per verbose acknowledgement BullMQ's 14; then, for each acknowledgement with a completion, the record's
 * key (in that order, acknowledgement by acknowledgement). ARGV[1]: the number of acknowledgements;
 * ARGV[2]: the queue's key prefix (BullMQ's ARGV[7]) if any is compact, else ''; ARGV[3]: the number of
 * distinct options of the compact ones, then each as JSON; then per acknowledgement the count of its words
 * (-1: compact) and of its completion's words (0: none); then, in order, each one's words followed by its
 * completion's op code and arguments.
 *
 * A completion of op RIDE_OP (no arguments) is a record riding in that acknowledgement's ARGV[9]
 * (ack-ride.ts): checked absent from the job's hash first, its reply HAS_RECORD (and BullMQ's script not
 * run) if there is one; of op RIDE_SOLE_OP, the same without the check (a sole delivery's). One of op RIDE_CLAIMED_OP (owner, steps key) is a done record riding there too, of
 * a run claimed once by that owner: checked to be that owner's running record first (else HAS_RECORD), its
 * steps key deleted once BullMQ's script has written it. Replies, per acknowledgement, {completion's reply
 * or nil, BullMQ's reply}. An error raised by one acknowledgement's completion or script is that one's
 * reply (`{'error', message}` for the completion, an error for BullMQ's): the others go on. A compact
 * acknowledgement's reply that fetched the next job (`{hash as a flat array, job id, 0, 0}`) comes as that
 * table in JSON (foldReply reads it): ioredis decodes a reply item by item in JavaScript, about three
 * quarters of a fetched job's decoding cost saved this way (measured, 8 acknowledgements a call), and
 * Redis writes one string rather than some 25, at about the cost of encoding them. BullMQ's
 * KEYS[2] (active list), KEYS[12] (the job's key), ARGV[1] (job id), ARGV[5] (target) and ARGV[8] (its
 * options) are read for the lock below; ack-fold.test.ts breaks if a BullMQ release moves them.
 */
export function ackFoldLua(moveToFinished: string): string {
  const n = MOVE_TO_FINISHED_KEYS;
  const shared = Array.from({ length: SHARED_KEYS.length }, (_, i) => `KEYS[${i + 1}]`);
  // BullMQ's KEYS from the shared ones and the job's key (KEYS[12]).
  const rebuilt = [...shared.slice(0, JOB_KEY_INDEX), 'jobKey', ...shared.slice(JOB_KEY_INDEX)].join(', ');
  return `${COMPLETE_OP_LUA}
local msgpack = cmsgpack
local cmsgpack = {pack = msgpack.pack, unpack = function(v)
  if type(v) == 'table' then return v end
  local first = type(v) == 'string' and string.byte(v, 1)
  if first == 123 or first == 91 then return cjson.decode(v) end
  return msgpack.unpack(v)
end}
local function moveToFinished(KEYS, ARGV)
${moveToFinished}
end
${leanFinishLua()}
-- A compact acknowledgement: the lean path where it serves (ack-lean-lua.ts), else BullMQ's script.
local function finishCompact(keys, argv)
  local r = leanFinish(keys, argv)
  if r ~= nil then return r end
  return moveToFinished(keys, argv)
end
local function raised(e)
  return type(e) == 'table' and tostring(e.err) or tostring(e)
end
-- A job still active whose lock is gone (lost with a failed master, or expired while its worker was paused)
-- and that no one else has taken: this delivery's result is recorded, so it may be acknowledged now rather
-- than refused ('Missing lock') and redelivered by BullMQ's stall check a minute later. BullMQ's lock is
-- set to this delivery's token, and its script removes it as usual.
local function relock(keys, argv)
  local lock = keys[12] .. ':lock'
  if redis.call('EXISTS', lock) == 0 and redis.call('LPOS', keys[2], argv[1]) then
    local opts = cmsgpack.unpack(argv[8])
    redis.call('SET', lock, opts['token'], 'PX', tonumber(opts['lockDuration']) or 30000)
  end
end
local unwritten = {${REFUSED_UNWRITTEN.map((c) => `[${c}] = true`).join(', ')}}
local acks = tonumber(ARGV[1])
local prefix = ARGV[2]
local shared = {}
for j = 1, tonumber(ARGV[3]) do shared[j] = cjson.decode(ARGV[3 + j]) end
local counts = 3 + #shared
local out = {}
local k, a = 0, counts + 2 * acks
if prefix ~= '' then k = ${SHARED_KEYS.length} end
for i = 1, acks do
  local argc, own = tonumber(ARGV[counts + 2 * i - 1]), tonumber(ARGV[counts + 2 * i])
  local keys, argv
  local compact = argc < 0
  -- A compact acknowledgement that cannot be decoded (foldWords never sends one) is refused alone.
  local undecodable = false
  if compact then
    argc = 1
    local decoded, w = pcall(cjson.decode, ARGV[a + 1])
    if decoded and type(w) == 'table' and shared[w[6]] then
      local jobKey = w[1]
      local opts = shared[w[6]]
      opts['token'] = w[5]
      keys = {${rebuilt}}
      argv = {string.sub(jobKey, #prefix + 1), w[2], 'returnvalue', w[3], 'completed', w[4], prefix, opts, w[7] or ''}
    else
      undecodable = 'tickwork: a compact acknowledgement could not be decoded: ' .. raised(w)
    end
  else
    keys = {unpack(KEYS, k + 1, k + ${n})}
    argv = {unpack(ARGV, a + 1, a + argc)}
    k = k + ${n}
  end
  local ckey = false
  if own > 0 then
    k = k + 1
    ckey = KEYS[k]
  end
  local reply = false
  local op = own > 0 and not undecodable and ARGV[a + argc + 1]
  local stepsKey = false
  if op == '${RIDE_SOLE_OP}' then
    -- A sole delivery's record riding there (ledger-lua.ts, RIDE_SOLE_OP): no check.
  elseif op == '${RIDE_OP}' then
    -- A record riding in BullMQ's own fields (ARGV[9]; ack-ride.ts): none may be there yet. A check that
    -- fails (a key of the wrong type) refuses the ride, and the record's own Lua judges it after the call.
    local checked, has = pcall(redis.call, 'HEXISTS', ckey, '${JOB_RECORD_FIELD}')
    if not checked or has == 1 then reply = '${HAS_RECORD}' end
  elseif op == '${RIDE_CLAIMED_OP}' then
    -- The done record riding there replaces this delivery's running record, claimed once: anything else
    -- (another holder, a run done, a run claimed again) goes again with op d. Its steps go once it is written.
    local checked, record = pcall(redis.call, 'HGET', ckey, '${JOB_RECORD_FIELD}')
    local state, holder, _, claims = parse(checked and record or nil)
    if state ~= 'r' or holder ~= ARGV[a + argc + 2] or claims ~= '1' then reply = '${HAS_RECORD}' else stepsKey = ARGV[a + argc + 3] end
  elseif own > 0 then
    local ok, r = pcall(ops[op], ckey, unpack(ARGV, a + argc + 2, a + argc + own))
    if not ok then reply = {'error', raised(r)} elseif r ~= nil then reply = r end
    -- Should it fail (a key of the wrong type), BullMQ's own checks below judge the acknowledgement.
    if reply == 1 and argv[5] == 'completed' then pcall(relock, keys, argv) end
  end
  a = a + argc + own
  local ok, result = false, false
  if undecodable then result = undecodable
  elseif reply ~= '${HAS_RECORD}' then ok, result = pcall(compact and finishCompact or moveToFinished, keys, argv) end
  if ok and stepsKey and not unwritten[result] then redis.call('DEL', stepsKey) end
  if not ok and result then result = redis.error_reply(raised(result)) elseif result == nil then result = false end
  if compact and ok and type(result) == 'table' and type(result[1]) == 'table' and #result[1] > 0 then
    -- The next job fetched (its hash, id, 0, 0): one JSON string rather than some 25 replies to decode.
    local encoded, json = pcall(cjson.encode, result)
    if encoded then result = json end
  end
  out[i] = {reply, result}
end
-- Every acknowledgement has its reply by now; should this fail (a key of the wrong type), none is failed for it.
if prefix ~= '' then pcall(leanAfter, KEYS[${SHARED_KEYS.indexOf(3) + 1}], KEYS[${SHARED_KEYS.indexOf(8) + 1}]) end
return out
`;
}

/** BullMQ's KEYS and ARGV, as indexes of its KEYS-then-ARGV array (ledger-lua.ts). */
const { jobKey: JOB_KEY_INDEX, jobId: JOB_ID, timestamp: TIMESTAMP, property: PROPERTY, value: VALUE, target: TARGET, fetchNext: FETCH_NEXT, prefix: PREFIX } = MOVE_TO_FINISHED_AT;
const OPTIONS = OPTIONS_INDEX;
/** BullMQ's KEYS (0-based) shared by every job's completion in a queue: all but KEYS[12], the job's key. */
const SHARED_KEYS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13];

/** One acknowledgement of a call: BullMQ's KEYS then ARGV, and its completion's record key, op and words (ack-fold.ts). */
export interface FoldedAck {
  args: unknown[];
  completion: { key: string; op: AheadOp; args: readonly (string | number)[] } | undefined;
}

/** How an acknowledgement's record rides in its own ARGV[9] (ack-ride.ts), if it does. */
export type Ride = typeof RIDE_OP | typeof RIDE_SOLE_OP | typeof RIDE_CLAIMED_OP | undefined;

/**
 * The words of one call of the script for `batch`, each acknowledgement's record riding as `rides` says,
 * in one array (ioredis flattens it, and spreading every word costs more per job than these loops):
 * numkeys, KEYS, then ARGV (see ackFoldLua for the layout).
 */
export function foldWords(batch: readonly FoldedAck[], rides: readonly Ride[]): unknown[] {
  const can = batch.map((ack) => compactable(ack.args));
  const base = batch[can.indexOf(true)]?.args;
  const compact = batch.map((ack, j) => base !== undefined && can[j] === true && sharesKeys(ack.args, base));
  const keys: unknown[] = base ? SHARED_KEYS.map((i) => base[i]) : [];
  for (let j = 0; j < batch.length; j++) {
    const ack = batch[j] as FoldedAck;
    if (!compact[j]) for (let i = 0; i < MOVE_TO_FINISHED_KEYS; i++) keys.push(ack.args[i]);
    if (ack.completion) keys.push(ack.completion.key);
  }
  // Each compact acknowledgement's options: its token, and which of the call's distinct others are its.
  const options = batch.map((ack, j) => (compact[j] ? splitOptions(ack.args[OPTIONS] as AckOptions | Uint8Array) : undefined));
  const distinct = new Map<string, number>();
  for (const o of options) if (o && !distinct.has(o.json)) distinct.set(o.json, distinct.size + 1);
  const words: unknown[] = [keys.length, ...keys, batch.length, base ? base[PREFIX] : '', distinct.size, ...distinct.keys()];
  for (let j = 0; j < batch.length; j++) {
    const ack = batch[j] as FoldedAck;
    const c = ack.completion;
    const argc = compact[j] ? -1 : ack.args.length - MOVE_TO_FINISHED_KEYS;
    const ride = rides[j];
    words.push(argc, !c ? 0 : ride === RIDE_OP || ride === RIDE_SOLE_OP ? 1 : ride ? 3 : c.args.length + 1);
  }
  for (let j = 0; j < batch.length; j++) {
    const ack = batch[j] as FoldedAck;
    const { args, completion: c } = ack;
    const ride = rides[j];
    // The completions' words: completeUnclaimed's mode, owner, encoded result (lazy-run.ts, recordUnclaimed);
    // complete's mode, owner, encoded result, done TTL, steps key (ledger.ts, completeArgs).
    const o = options[j];
    if (o) {
      // One word, as JSON: ioredis's cost is per word (each its own header and conversion), about half of it
      // saved this way for a call of 8 (measured with ioredis's Command); Redis's cjson reads it at once.
      const word = [args[JOB_KEY_INDEX], asWord(args[TIMESTAMP]), asWord(args[VALUE]), asWord(args[FETCH_NEXT]), o.token, distinct.get(o.json)];
      if (c && ride) word.push(recordPair(args, String(c.args[1]), String(c.args[2])));
      words.push(JSON.stringify(word));
    } else {
      const field = c && ride ? recordField(args, String(c.args[1]), String(c.args[2])) : undefined;
      for (let i = MOVE_TO_FINISHED_KEYS; i < args.length; i++) {
        const word = args[i];
        words.push(i === RIDE_FIELDS_INDEX && field ? field : word instanceof AckOptions ? word.packed() : word);
      }
    }
    if (!c) continue;
    if (ride === RIDE_OP || ride === RIDE_SOLE_OP) words.push(ride);
    else if (ride) words.push(RIDE_CLAIMED_OP, c.args[1], c.args[4]);
    else {
      words.push(OP_CODES[c.op]);
      for (const word of c.args) words.push(word);
    }
  }
  return words;
}

/**
 * Whether BullMQ's acknowledgement can go compact: a completion that sets no job fields of its own, its
 * options packed, its job's key the queue's prefix and its id (as BullMQ makes it: queue.toKey(id)).
 */
export function compactable(args: readonly unknown[]): boolean {
  return (
    args.length === OPTIONS + 2 &&
    args[TARGET] === 'completed' &&
    args[PROPERTY] === 'returnvalue' &&
    args[RIDE_FIELDS_INDEX] === undefined &&
    (args[OPTIONS] instanceof AckOptions || args[OPTIONS] instanceof Uint8Array) &&
    typeof args[PREFIX] === 'string' &&
    args[JOB_KEY_INDEX] === args[PREFIX] + String(args[JOB_ID]) &&
    !LONE_SURROGATE.test(args[JOB_KEY_INDEX] as string)
  );
}

/**
 * A UTF-16 surrogate not part of a pair: JSON.stringify writes it as an escape Redis's cjson refuses to
 * decode, so a job whose id holds one is acknowledged verbose, as BullMQ sends it (ioredis encodes it as
 * U+FFFD there, as it does in BullMQ's own calls).
 */
const LONE_SURROGATE = /\p{Surrogate}/u;

/** A word as ioredis sends it: null and undefined as '', anything else as its string. */
function asWord(v: unknown): string {
  return typeof v === 'string' ? v : v == null ? '' : String(v);
}

/** Whether `args` has the same shared KEYS and prefix as `base` (the call carries them once). */
function sharesKeys(args: readonly unknown[], base: readonly unknown[]): boolean {
  if (args[PREFIX] !== base[PREFIX]) return false;
  for (const i of SHARED_KEYS) if (args[i] !== base[i]) return false;
  return true;
}

/**
 * An acknowledgement's options as its token and the rest as JSON: the worker's short path's as they are
 * (AckOptions), BullMQ's own unpacked. msgpack's nil is no entry in Lua, JSON's null a value (cjson.null)
 * that BullMQ's checks for nil would take for one: nulls are left out (withoutNulls). BullMQ's token is
 * always a string ('0' for a job without a lock).
 */
function splitOptions(options: AckOptions | Uint8Array): { token: string; json: string } {
  if (options instanceof AckOptions) return { token: options.token, json: options.shared.json() };
  const { token, ...rest } = withoutNulls(unpack(options)) as Record<string, unknown>;
  return { token: typeof token === 'string' ? token : '', json: JSON.stringify(rest) };
}

/**
 * BullMQ's reply to an acknowledgement as the script returned it: a next job fetched by a compact one comes
 * as JSON (see ackFoldLua), which is parsed into what BullMQ's script returns; anything else is as it came.
 * Redis's cjson writes every byte of a string as it is, escaping only what JSON must, so the text decodes
 * as the same strings ioredis would have made of each reply. One that cannot be parsed is that
 * acknowledgement's error.
 */
export function foldReply(result: unknown): unknown {
  if (typeof result !== 'string' || !result.startsWith('[')) return result;
  try {
    return JSON.parse(result) as unknown;
  } catch (err) {
    return new LedgerCallError(`the reply to an acknowledgement could not be read: ${err instanceof Error ? err.message : String(err)}`);
  }
}
