import type { RedisClient } from '@tickwork/core';
import { ackFoldLua, compactable, foldReply, foldWords, type Ride } from './ack-fold-lua.js';
import { HAS_RECORD, MOVE_TO_FINISHED_AT, MOVE_TO_FINISHED_KEYS, RIDE_CLAIMED_OP, RIDE_OP, RIDE_SOLE_OP } from './ack-constants.js';
import { packOptions } from './ack-options.js';
import { canRide, rideRefused } from './ack-ride.js';
import { completionWriter, LedgerCallError, type AheadOp, type AheadOutcome, type LedgerReply } from '@tickwork/exactly-once';

/**
 * A worker's acknowledgements, sent a few to a script call, each with its run's completion when it has one.
 *
 * - **Batched acknowledgements.** BullMQ acknowledges each job with its own moveToFinished script call. When
 *   Redis still owes the worker's connection replies (a busy worker), an acknowledgement waits for others:
 *   every ACK_GROUP of them go as one script call, and what is left goes at the end of the event-loop turn.
 *   One script call costs ioredis and Redis much less than ACK_GROUP of them (measured with the bench's
 *   no-op job at concurrency 50: 7 to 11 µs of Node CPU per job less), and Redis, busy with the calls before,
 *   loses no time meanwhile. An acknowledgement sent to an idle connection (a job finishing alone) goes at
 *   once. A cluster client does not say whether it owes replies, so there every one goes at once.
 * - **Completions inside them.** A run's completion rides in its job's acknowledgement, where written ahead
 *   (CompletionWriter) it costs a command of its own: the first completion of an event-loop turn (see take);
 *   the others of the turn are written ahead together. For every completion whose job is known: a record in
 *   the job's own hash (mode j), riding as one of the job's fields BullMQ's script writes (ack-ride.ts), or
 *   under the run's own key (mode k), which shares the queue's slot on a cluster (redis/keyspace.ts), so a
 *   call touches one slot there too.
 *
 * How: BullMQ sends every script through its client's `runCommand(name, args)` (ioredis-client.js, an
 * override it lets callers replace). foldAcks replaces it on a worker's connection: moveToFinished calls go
 * through one script (ack-fold-lua.ts, ackFoldLua) that runs, per acknowledgement, its completion's Lua and
 * then BullMQ's own moveToFinished (its text, read from the client it was defined on, so it is always the
 * installed version's) with that acknowledgement's KEYS and ARGV unchanged (a completed job's sent compact,
 * as text, and rebuilt there: ack-fold-lua.ts). Each caller gets its own acknowledgement's reply, or its
 * error: one failing does not fail the others. Anything else passes through. Options the worker left
 * unpacked (AckOptions, ack-options.ts) are packed before an acknowledgement goes to BullMQ's own script.
 *
 * What it keeps: a completion still runs before its acknowledgement and on its connection (in the same
 * script), so a job is never acknowledged without its result recorded, and a refused completion (lease
 * lost, job gone) leaves the acknowledgement to BullMQ's checks as before; a recorded one also acknowledges
 * a job whose BullMQ lock alone is gone (ackFoldLua says when). A completion BullMQ does not acknowledge in
 * the same turn (a worker closing skips moveToFinished) is written ahead at the turn's end as before, so none
 * is ever dropped; one written there before a later acknowledgement still runs before it. Commands BullMQ
 * sends meanwhile (a lock's renewal, a fetch) may reach Redis before an acknowledgement that waited; none of
 * them depends on it. If BullMQ's client lacks what this relies on, nothing is replaced and completions are
 * written ahead (foldAcks returns false; the worker logs it).
 */
const FOLD_COMMAND = 'tickworkAckFold';
/** KEYS[12] of BullMQ's moveToFinished: the job's key (its hash). */
const JOB_KEY_INDEX = MOVE_TO_FINISHED_AT.jobKey;
/**
 * Acknowledgements per script call at most. Few: a call goes as soon as it is full, so Redis works on it
 * while the worker finishes the next jobs. Measured at concurrency 50 with the bench's no-op job, a completed
 * job's acknowledgement going compact (ack-fold-lua.ts): tickwork's worker ran about 12% faster in groups of
 * 8 than of 4 (three interleaved runs each: 35,000-38,000 jobs/s against 31,000-33,000), and alike in groups
 * of 8, 12 and 16, as the queue's keys a call carries once are shared by more jobs.
 */
const ACK_GROUP = 8;

interface BullClient {
  runCommand(name: string, args: unknown[]): Promise<unknown>;
  defineCommand(name: string, def: { lua: string }): void;
  scriptsSet?: Record<string, { lua?: string; numberOfKeys?: number | null } | undefined>;
  /** ioredis: commands sent whose replies have not come yet (absent on a cluster client). */
  commandQueue?: { length: number };
  [FOLD_COMMAND]?: (words: unknown[]) => Promise<[LedgerReply | null, unknown][]>;
}

interface Waiting {
  /** The record's key: the job's own (mode j), or the run's key (mode k). */
  key: string;
  op: AheadOp;
  args: (string | number)[];
  outcome: AheadOutcome;
  /** The job's delivery is known to be its only one: a riding record needs no check (ack-ride.ts). */
  sole: boolean;
}

/** An acknowledgement waiting for its script call. */
interface Ack {
  args: unknown[];
  completion: Waiting | undefined;
  resolve: (reply: unknown) => void;
  reject: (err: unknown) => void;
}

const folded = new WeakMap<RedisClient, boolean>();
/** Per folded connection: calls of the acknowledgements' script (ackFoldLua), and the acknowledgements they carried. */
const batchesSent = new WeakMap<RedisClient, { calls: number; acks: number }>();

/** Acknowledgements sent in shared script calls on `redis` so far (the bench counts each as a request of its job). */
export function ackBatchesSent(redis: RedisClient): { calls: number; acks: number } | undefined {
  return batchesSent.get(redis);
}

/**
 * Whether acknowledgements on `redis` go through the fold, which takes their options unpacked (AckOptions)
 * wherever they go: the worker's short completion path leaves them unpacked only then.
 */
export function acksFolded(redis: RedisClient): boolean {
  return folded.get(redis) === true;
}

/** Folds completions into acknowledgements on `redis`, a BullMQ worker's connection, and batches those. Idempotent. */
export function foldAcks(redis: RedisClient): boolean {
  const known = folded.get(redis);
  if (known !== undefined) return known;
  const ok = install(redis);
  folded.set(redis, ok);
  return ok;
}

function install(redis: RedisClient): boolean {
  const client = redis as unknown as BullClient;
  const move = Object.keys(client.scriptsSet ?? {}).find((n) => n.startsWith('moveToFinished:'));
  const script = move ? client.scriptsSet?.[move] : undefined;
  const lua = script?.numberOfKeys === MOVE_TO_FINISHED_KEYS ? script.lua : undefined; // a BullMQ whose script changed shape is not folded
  if (!move || !lua || typeof client.runCommand !== 'function' || typeof client.defineCommand !== 'function') return false;
  client.defineCommand(FOLD_COMMAND, { lua: ackFoldLua(lua) });
  const passThrough = client.runCommand;
  const writer = completionWriter(redis);
  const waiting = new Map<string, Waiting>();
  let sweep: NodeJS.Immediate | undefined;

  // What BullMQ did not acknowledge in the turn it completed goes ahead, as without the fold.
  const writeAheadLeft = (): void => {
    sweep = undefined;
    foldedInTurn = false;
    if (waiting.size === 0) return; // the usual case: every completion of the turn rode in its acknowledgement
    for (const w of waiting.values()) void writer.ahead(w.key, w.args, w.outcome, w.op);
    waiting.clear();
  };
  let foldedInTurn = false;

  writer.fold = {
    take(jobKey, key, op, args, outcome, sole) {
      // Every record in its job's own hash (recordedInJob) rides in its acknowledgement: a field BullMQ
      // sets, with no words (a run never claimed) or two (one claimed) of its own. Any other completion (a
      // run's own key), one per event-loop turn: a turn in which many jobs finish (high concurrency) writes
      // the others ahead, 16 to a script call, which costs Node and Redis less per job than a completion's
      // words in each acknowledgement (measured: about 20 µs of Node CPU per job more at concurrency 50,
      // folding every one; BullMQ's acknowledgement carries a Buffer, and ioredis encodes every argument of
      // such a command as a Buffer too). A job finishing alone in its turn (low concurrency) saves a command.
      const rides = recordedInJob(key, jobKey, args);
      if (!rides && foldedInTurn) return false;
      if (!rides) foldedInTurn = true;
      waiting.set(jobKey, { key, op, args, outcome, sole });
      sweep ??= setImmediate(writeAheadLeft);
      return true;
    },
  };

  const sent = { calls: 0, acks: 0 };
  batchesSent.set(redis, sent);
  let acks: Ack[] = [];
  let atTurnEnd = false;
  const sendLeft = (): void => {
    atTurnEnd = false;
    send();
  };
  const send = (): void => {
    const batch = acks;
    acks = [];
    if (batch.length === 0) return;
    const only = batch.length === 1 ? batch[0] : undefined;
    const sent = only && alone(only.args, only.completion);
    if (only && sent) {
      sent.then(only.resolve, only.reject);
      return;
    }
    fold(batch);
  };

  /** One script call of the fold for `batch`, counted for ackBatchesSent. */
  const fold = (batch: Ack[], rideAllowed = true): void => {
    sent.calls++;
    sent.acks += batch.length;
    sendBatch(client, batch, writer, rideAllowed ? (refused) => fold(refused, false) : undefined);
  };

  /**
   * An acknowledgement going alone in its call, if it needs no fold: one without a completion that cannot go
   * compact, in BullMQ's own call (nothing to share it). Undefined for one that goes through the fold: a
   * completed job's goes compact, and where it can lean, through the fold's call even alone (measured at
   * concurrency 1, about 4 µs of Node CPU per job less than BullMQ's own script with its packed options).
   */
  const alone = (args: unknown[], c: Waiting | undefined): Promise<unknown> | undefined =>
    c || compactable(args) ? undefined : passThrough(move, packOptions(args));

  client.runCommand = (name, args) => {
    if (name !== move || args.length <= MOVE_TO_FINISHED_KEYS) return passThrough(name, args);
    const jobKey = args[JOB_KEY_INDEX];
    const completion = typeof jobKey === 'string' ? waiting.get(jobKey) : undefined;
    if (completion) waiting.delete(jobKey as string);
    // Alone on an idle connection (a job finishing by itself, as at concurrency 1): it goes at once, as
    // `send` would send it, without an acknowledgement record and a promise of its own to wait in.
    if (acks.length === 0 && (client.commandQueue?.length ?? 0) === 0) {
      const sent = alone(args, completion);
      if (sent) return sent;
    }
    return new Promise((resolve, reject) => {
      acks.push({ args, completion, resolve, reject });
      if (acks.length >= ACK_GROUP || (client.commandQueue?.length ?? 0) === 0) send();
      else if (!atTurnEnd) {
        atTurnEnd = true;
        setImmediate(sendLeft);
      }
    });
  };
  return true;
}

/**
 * Whether a completion's record is a field of the acknowledged job's own hash: its key is the job's, and its
 * words (completeUnclaimed's and complete's alike) start with its mode, 'j'. Such a record rides.
 */
function recordedInJob(key: string, jobKey: unknown, args: readonly (string | number)[]): boolean {
  return key === jobKey && args[0] === 'j';
}

/** Records in the job's own hash ride: a run never claimed (completeUnclaimed), or a claimed one (complete). */
function rideOf(args: unknown[], c: Waiting | undefined): Ride {
  if (!c || !recordedInJob(c.key, args[JOB_KEY_INDEX], c.args) || !canRide(args)) return undefined;
  if (c.op !== 'completeUnclaimed') return RIDE_CLAIMED_OP;
  return c.sole ? RIDE_SOLE_OP : RIDE_OP;
}

/**
 * One script call for `batch` (ack-fold-lua.ts, ackFoldLua, for the layout); each caller gets its own reply.
 * With `refold`, a record that can ride does (RIDE_OP, RIDE_SOLE_OP, RIDE_CLAIMED_OP), and those refused there (a record
 * not as the ride expects, or BullMQ refusing before it writes) are handed to `refold`, which sends them
 * with the record's own Lua.
 */
function sendBatch(client: BullClient, batch: Ack[], writer: ReturnType<typeof completionWriter>, refold?: (refused: Ack[]) => void): void {
  const rides = batch.map((ack) => (refold ? rideOf(ack.args, ack.completion) : undefined));
  const words = foldWords(batch, rides);
  const call = client[FOLD_COMMAND] as NonNullable<BullClient[typeof FOLD_COMMAND]>;
  call(words).then(
    (replies) => {
      let refused: Ack[] | undefined;
      for (let i = 0; i < batch.length; i++) {
        const ack = batch[i] as Ack;
        const [reply, raw] = replies[i] ?? [null, new LedgerCallError('no reply for this acknowledgement in its batch')];
        const result = foldReply(raw);
        const c = ack.completion;
        if (c && rides[i] && ((reply as unknown) === HAS_RECORD || rideRefused(result))) {
          (refused ??= []).push(ack); // nothing was written: it goes again with the record's own Lua
          continue;
        }
        if (c && rides[i]) {
          if (result instanceof Error) {
            void writer.ahead(c.key, c.args, c.outcome, c.op); // whether BullMQ wrote it is unknown: as a failed call
            ack.reject(result);
          } else {
            c.outcome(1);
            ack.resolve(result ?? null);
          }
          continue;
        }
        if (c) {
          if (Array.isArray(reply) && reply[0] === 'error') c.outcome(new LedgerCallError(`ledger ${c.op} of ${c.key} failed in Redis: ${String(reply[1])}`));
          else if (reply === null) c.outcome(new LedgerCallError(`ledger ${c.op} of ${c.key} got no reply from its batch`));
          else c.outcome(reply);
        }
        if (result instanceof Error) ack.reject(result);
        else ack.resolve(result ?? null);
      }
      if (refused) refold?.(refused);
    },
    (err: unknown) => {
      for (const ack of batch) {
        // Whether it ran is unknown: the completion goes again, ahead of whatever BullMQ sends next (a
        // completion of the same owner is accepted twice).
        const c = ack.completion;
        if (c) void writer.ahead(c.key, c.args, c.outcome, c.op);
        ack.reject(err);
      }
    },
  );
}
