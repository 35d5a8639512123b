/** The op code of an acknowledgement in the fold whose record, of a run never claimed, rides in BullMQ's ARGV[9] (ack-ride.ts). */
export const RIDE_OP = 'ride';
/**
 * As RIDE_OP, for a delivery known to be its job's only one (apps/worker sole-delivery.ts): no check. A
 * record could only be in its hash from another delivery, which would hold the job's lock, and BullMQ's
 * script (or the lean path) refuses an acknowledgement whose lock is not its own before it writes anything.
 */
export const RIDE_SOLE_OP = 'ride-sole';
/**
 * The op code of an acknowledgement in the fold whose record, of a run this delivery claimed once (a claim
 * count of 1), rides in BullMQ's ARGV[9]; its words: the owner and the run's steps key (ack-ride.ts).
 */
export const RIDE_CLAIMED_OP = 'ride-claimed';
/**
 * BullMQ's moveToFinished refusals returned before it writes anything (job missing, lock missing, children
 * pending, lock another's, children failed): a record riding there was not written.
 */
export const REFUSED_UNWRITTEN: readonly number[] = [-1, -2, -4, -6, -9];
/** The reply, in the fold, when the job's hash already holds a run record (nothing was written). */
export const HAS_RECORD = 'tw:has-record';

/** BullMQ's moveToFinished takes 14 KEYS (ack-fold.ts checks the installed script's count). */
export const MOVE_TO_FINISHED_KEYS = 14;

/**
 * Where BullMQ's moveToFinished keeps what the acknowledgements' code reads, as indexes of its KEYS-then-ARGV
 * array (ack-fold.ts, ack-fold-lua.ts, ack-ride.ts, ack-options.ts): KEYS[12] the job's key, then ARGV[1]
 * to ARGV[9].
 */
export const MOVE_TO_FINISHED_AT = {
  jobKey: 11,
  jobId: MOVE_TO_FINISHED_KEYS,
  timestamp: MOVE_TO_FINISHED_KEYS + 1,
  property: MOVE_TO_FINISHED_KEYS + 2,
  value: MOVE_TO_FINISHED_KEYS + 3,
  target: MOVE_TO_FINISHED_KEYS + 4,
  fetchNext: MOVE_TO_FINISHED_KEYS + 5,
  prefix: MOVE_TO_FINISHED_KEYS + 6,
  options: MOVE_TO_FINISHED_KEYS + 7,
  fields: MOVE_TO_FINISHED_KEYS + 8,
} as const;
