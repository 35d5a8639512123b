import { HAS_RECORD, JOB_RECORD_FIELD, MOVE_TO_FINISHED_AT, REFUSED_UNWRITTEN, unclaimedDoneRecord } from './ledger-lua.js';

/**
 * The cheapest acknowledgement that carries a result: that of a run recorded in its job's own hash and
 * never claimed (completeUnclaimed: a lazily claimed run that made no effect, lazy-run.ts), acknowledged
 * alone in its script call (ack-fold.ts sends it). Its record goes as a field of the job that BullMQ's
 * moveToFinished writes itself: its ARGV[9] ("job fields to update"), which it sets with HMSET right after
 * its lock check, before anything else it writes. The script is BullMQ's own text, unchanged, preceded by
 * one check: the job's hash holds no run record yet (another delivery's claim or result, which the fold's
 * HSETNX would keep).
 *
 * A delivery known to be the only one of its job (the job's hash held no run record when it was delivered,
 * and nothing can have delivered it again since: apps/worker sole-delivery.ts) needs no check: a record can
 * only appear in its hash from another delivery, which would hold the job's lock, and BullMQ refuses an
 * acknowledgement whose lock is not its own before it writes anything. Its record goes in BullMQ's own
 * script, unchanged, as one of the job's fields.
 *
 * Why: the fold's script (ack-fold-lua.ts, ackFoldLua) runs BullMQ's text as a function inside its own, with
 * the completion's Lua and a lock check around it. Counted with callgrind on the Redis server, a no-op job at
 * concurrency 1 cost Redis 528,000 instructions that way against a bare BullMQ worker's 464,000: the server
 * clock (TIME) alone 13,000, the completion 14,500, the lock check 5,500, the frame the rest. Riding costs
 * the check and one field: 484,000.
 *
 * What it keeps: the record is written in the acknowledgement's script, by the same writes, so a job is
 * never acknowledged without it; its time is the acknowledgement's (BullMQ's finishedOn) rather than the
 * Redis server's, as nothing but a reader shows it. When the check finds a record, or BullMQ refuses before
 * writing anything (the job is gone, its lock is gone or is another's, it has children pending), nothing
 * was written, and the acknowledgement goes again through the fold, which handles each of those cases as
 * it always has (the record's HSETNX, the relock of a job that lost its lock alone). Any other reply of
 * BullMQ's comes after its HMSET: the record was written.
 */

const refusedUnwritten = new Set(REFUSED_UNWRITTEN);

/** ARGV[2] (the acknowledgement's timestamp), ARGV[5] (its target) and ARGV[9] (job fields to update), as indexes of BullMQ's KEYS-then-ARGV array. */
const { timestamp: TIMESTAMP, target: TARGET, fields: FIELDS } = MOVE_TO_FINISHED_AT;


/** The riding script: BullMQ's moveToFinished text after the check (see the file comment). */
export function ackRideLua(moveToFinished: string): string {
  return `if redis.call('HEXISTS', KEYS[12], '${JOB_RECORD_FIELD}') == 1 then return '${HAS_RECORD}' end\n${moveToFinished}`;
}

/** Whether an acknowledgement (BullMQ's KEYS then ARGV) can carry a record: it completes the job and sets no job fields of its own. */
export function canRide(args: readonly unknown[]): boolean {
  return args.length === FIELDS + 1 && args[TARGET] === 'completed' && args[FIELDS] === undefined;
}

/**
 * Sends an acknowledgement (BullMQ's KEYS then ARGV) with its record in ARGV[9], by `send` (the riding
 * script, or BullMQ's own for a sole delivery). The record is set in BullMQ's own array for the call and
 * taken out after it, rather than a copy of the array made per job: ioredis copies the words as it makes the
 * command, and whoever gets `args` next (the fold, after a refused ride) gets them as BullMQ made them.
 */
export function sendRide<R>(send: (args: unknown[]) => Promise<R>, args: unknown[], owner: string, encodedResult: string): Promise<R> {
  args[FIELDS] = recordField(args, owner, encodedResult);
  try {
    return send(args);
  } finally {
    args[FIELDS] = undefined;
  }
}

/** ARGV[9] (its index in BullMQ's KEYS-then-ARGV array), where a record rides. */
export const RIDE_FIELDS_INDEX = FIELDS;

/**
 * ARGV[9] of an acknowledgement carrying a done record claimed once (a run never claimed: its claim and
 * completion are one write; or one claimed once, RIDE_CLAIMED_OP), as the one job field BullMQ sets.
 */
export function recordField(args: readonly unknown[], owner: string, encodedResult: string): Buffer {
  return packStringPair(JOB_RECORD_FIELD, unclaimedDoneRecord(owner, String(args[TIMESTAMP]), encodedResult));
}

/** recordField's pair as JSON, for a compact acknowledgement (ack-fold-lua.ts), whose fields BullMQ's script is handed decoded from JSON. */
export function recordFieldJson(args: readonly unknown[], owner: string, encodedResult: string): string {
  return JSON.stringify([JOB_RECORD_FIELD, unclaimedDoneRecord(owner, String(args[TIMESTAMP]), encodedResult)]);
}

/**
 * MessagePack of the array `[a, b]` of two strings, as BullMQ packs the job fields it is given and Redis's
 * cmsgpack reads them: a fixarray of two, each string as fixstr, str8, str16 or str32 by its UTF-8 length
 * (the bytes msgpackr writes for it: ack-ride.test.ts). Written out rather than through a general encoder:
 * it is one fixed shape, and msgpackr's `pack` was the largest single cost of a riding record, about 1.5 µs
 * of Node CPU per job in a CPU profile at concurrency 50, against a fraction of one for this.
 */
export function packStringPair(a: string, b: string): Buffer {
  const aLength = Buffer.byteLength(a);
  const bLength = Buffer.byteLength(b);
  const out = Buffer.allocUnsafe(1 + headerLength(aLength) + aLength + headerLength(bLength) + bLength);
  out[0] = 0x92;
  writeString(out, writeString(out, 1, a, aLength), b, bLength);
  return out;
}

function headerLength(bytes: number): number {
  return bytes < 32 ? 1 : bytes < 0x100 ? 2 : bytes < 0x10000 ? 3 : 5;
}

/** Writes `s` (`bytes` long in UTF-8) with its header at `at`; returns where it ends. */
function writeString(out: Buffer, at: number, s: string, bytes: number): number {
  if (bytes < 32) out[at++] = 0xa0 | bytes;
  else if (bytes < 0x100) {
    out[at++] = 0xd9;
    out[at++] = bytes;
  } else if (bytes < 0x10000) {
    out[at++] = 0xda;
    at = out.writeUInt16BE(bytes, at);
  } else {
    out[at++] = 0xdb;
    at = out.writeUInt32BE(bytes, at);
  }
  return at + out.write(s, at, bytes, 'utf8');
}

/** Whether a ride's reply (BullMQ's) says nothing was written (the acknowledgement goes again through the fold, with the record's own Lua). */
export function rideRefused(reply: unknown): boolean {
  return reply === HAS_RECORD || (typeof reply === 'number' && refusedUnwritten.has(reply));
}
