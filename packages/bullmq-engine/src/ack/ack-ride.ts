import { JOB_RECORD_FIELD, unclaimedDoneRecord } from '@tickwork/exactly-once';
import { HAS_RECORD, MOVE_TO_FINISHED_AT, REFUSED_UNWRITTEN } from './ack-constants.js';

/**
 * A record riding in its job's acknowledgement: the done record of a run recorded in its job's own hash
 * goes as a field of the job that BullMQ's moveToFinished writes itself, its ARGV[9] ("job fields to
 * update"), which it sets with HMSET right after its lock check, before anything else it writes. The fold's
 * script (ack-fold-lua.ts) sends it so: a run never claimed (completeUnclaimed, lazy-run.ts: RIDE_OP, checked
 * absent from the hash first; RIDE_SOLE_OP, a sole delivery's, unchecked) or claimed once (RIDE_CLAIMED_OP).
 *
 * A delivery known to be the only one of its job (the job's hash held no run record when it was delivered,
 * and nothing can have delivered it again since: apps/worker sole-delivery.ts) needs no check: a record can
 * only appear in its hash from another delivery, which would hold the job's lock, and BullMQ refuses an
 * acknowledgement whose lock is not its own before it writes anything.
 *
 * Why: counted with callgrind on the Redis server, a no-op job at concurrency 1 cost Redis 528,000
 * instructions with its completion's own Lua beside BullMQ's script, against a bare BullMQ worker's
 * 464,000; riding costs one field (and the check where one is needed).
 *
 * What it keeps: the record is written in the acknowledgement's script, by the same writes, so a job is
 * never acknowledged without it; its time is the acknowledgement's (BullMQ's finishedOn) rather than the
 * Redis server's, as nothing but a reader shows it. When the check finds a record, or BullMQ refuses before
 * writing anything (the job is gone, its lock is gone or is another's, it has children pending), nothing
 * was written, and the acknowledgement goes again through the fold with the record's own Lua, which handles
 * each of those cases as it always has (the record's HSETNX, the relock of a job that lost its lock alone).
 * Any other reply of BullMQ's comes after its HMSET: the record was written (ack-ride.test.ts pins the order).
 */

const refusedUnwritten = new Set(REFUSED_UNWRITTEN);

/** ARGV[2] (the acknowledgement's timestamp), ARGV[5] (its target) and ARGV[9] (job fields to update), as indexes of BullMQ's KEYS-then-ARGV array. */
const { timestamp: TIMESTAMP, target: TARGET, fields: FIELDS } = MOVE_TO_FINISHED_AT;

/** Whether an acknowledgement (BullMQ's KEYS then ARGV) can carry a record: it completes the job and sets no job fields of its own. */
export function canRide(args: readonly unknown[]): boolean {
  return args.length === FIELDS + 1 && args[TARGET] === 'completed' && args[FIELDS] === undefined;
}

/** ARGV[9] (its index in BullMQ's KEYS-then-ARGV array), where a record rides. */
export const RIDE_FIELDS_INDEX = FIELDS;

/**
 * ARGV[9] of an acknowledgement carrying a done record claimed once (a run never claimed: its claim and
 * completion are one write; or one claimed once, RIDE_CLAIMED_OP), as the one job field BullMQ sets: the
 * pair [field, record], which the fold's script hands BullMQ's as a table (ack-fold-lua.ts: inside a compact
 * acknowledgement's JSON; recordField, as JSON of its own, in a verbose one).
 */
export function recordPair(args: readonly unknown[], owner: string, encodedResult: string): [string, string] {
  return [JOB_RECORD_FIELD, unclaimedDoneRecord(owner, String(args[TIMESTAMP]), encodedResult)];
}

/** recordPair as JSON, ARGV[9] of a verbose acknowledgement. */
export function recordField(args: readonly unknown[], owner: string, encodedResult: string): string {
  return JSON.stringify(recordPair(args, owner, encodedResult));
}

/** Whether a ride's reply (BullMQ's) says nothing was written (the acknowledgement goes again through the fold, with the record's own Lua). */
export function rideRefused(reply: unknown): boolean {
  return reply === HAS_RECORD || (typeof reply === 'number' && refusedUnwritten.has(reply));
}
