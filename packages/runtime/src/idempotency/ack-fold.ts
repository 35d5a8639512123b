import type { RedisClient } from '../connection.js';
import { ackFoldLua } from './ledger-lua.js';
import { completionWriter, LedgerCallError, OP_CODES, type AheadOp, type AheadOutcome, type LedgerReply } from './ledger-batch.js';

/**
 * A run's completion inside BullMQ's own acknowledgement of its job: one script call where a completion
 * written ahead (CompletionWriter) costs a second command. For the first completion of an event-loop turn
 * (see take); the others of the turn are written ahead together. For every completion whose job is known: a record
 * in the job's own hash (mode j), or under the run's own key (mode k), which shares the queue's slot on a
 * cluster (redis/keyspace.ts), so the script touches one slot there too.
 *
 * How: BullMQ sends every script through its client's `runCommand(name, args)` (ioredis-client.js, an
 * override it lets callers replace). foldAcks replaces it on a worker's connection: a `moveToFinished` of a
 * job whose completion is waiting here goes as one script, the completion's Lua then BullMQ's own
 * moveToFinished (its text, read from the client it was defined on, so it is always the installed
 * version's) with its KEYS and ARGV unchanged (ledger-lua.ts, ackFoldLua). Anything else passes through.
 *
 * What it keeps: the completion still runs before the acknowledgement and on its connection (now in the
 * same script), so a job is never acknowledged without its result recorded, and a refused completion
 * (lease lost, job gone) leaves the acknowledgement to BullMQ's checks as before; a recorded one also
 * acknowledges a job whose BullMQ lock alone is gone (ackFoldLua says when). A completion BullMQ does
 * not acknowledge in the same turn (a worker closing skips moveToFinished) is written ahead at the turn's
 * end as before, so none is ever dropped; one written there before a later acknowledgement still runs
 * before it. If BullMQ's client lacks what this relies on, nothing is replaced and completions are written
 * ahead (foldAcks returns false; the worker logs it).
 */
const FOLD_COMMAND = 'tickworkAckFold';
/** KEYS[12] of BullMQ's moveToFinished: the job's key (its hash). */
const JOB_KEY_INDEX = 11;
const MOVE_KEYS = 14;

interface BullClient {
  runCommand(name: string, args: unknown[]): Promise<unknown>;
  defineCommand(name: string, def: { lua: string }): void;
  scriptsSet?: Record<string, { lua?: string; numberOfKeys?: number | null } | undefined>;
  [FOLD_COMMAND]?: (...args: unknown[]) => Promise<[LedgerReply, unknown]>;
}

interface Waiting {
  /** The record's key: the job's own (mode j), or the run's key (mode k). */
  key: string;
  op: AheadOp;
  args: (string | number)[];
  outcome: AheadOutcome;
}

const folded = new WeakMap<RedisClient, boolean>();

/** Folds completions into acknowledgements on `redis`, a BullMQ worker's connection. Idempotent. */
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
  const lua = script?.numberOfKeys === MOVE_KEYS ? script.lua : undefined; // a BullMQ whose script changed shape is not folded
  if (!move || !lua || typeof client.runCommand !== 'function' || typeof client.defineCommand !== 'function') return false;
  client.defineCommand(FOLD_COMMAND, { lua: ackFoldLua(lua) });
  const passThrough = client.runCommand;
  const writer = completionWriter(redis);
  const waiting = new Map<string, Waiting>();
  let sweep: NodeJS.Immediate | undefined;

  // What BullMQ did not acknowledge in the turn it completed goes ahead, as without the fold.
  const writeAheadLeft = (): void => {
    sweep = undefined;
    for (const w of waiting.values()) void writer.ahead(w.key, w.args, w.outcome, w.op);
    waiting.clear();
  };

  writer.fold = {
    take(jobKey, key, op, args, outcome) {
      // One per event-loop turn: a turn in which many jobs finish (high concurrency) writes the others ahead,
      // 16 to a script call, which costs Node and Redis less per job than a completion in each
      // acknowledgement (measured: about 20 µs of Node CPU per job more at concurrency 50, folding every one;
      // BullMQ's acknowledgement carries a Buffer, and ioredis encodes every argument of such a command as a
      // Buffer too). A job finishing alone in its turn (low concurrency) saves a command.
      if (sweep) return false;
      waiting.set(jobKey, { key, op, args, outcome });
      sweep = setImmediate(writeAheadLeft);
      return true;
    },
  };

  client.runCommand = (name, args) => {
    const jobKey = name === move && args.length > MOVE_KEYS ? args[JOB_KEY_INDEX] : undefined;
    const w = typeof jobKey === 'string' ? waiting.get(jobKey) : undefined;
    if (!w) return passThrough(name, args);
    waiting.delete(jobKey as string);
    // numkeys, BullMQ's keys, the record's key, BullMQ's ARGV, the completion's words, their count (one
    // array: ioredis flattens it, and spreading every word costs more per job than this loop).
    const words: unknown[] = [MOVE_KEYS + 1];
    for (let i = 0; i < MOVE_KEYS; i++) words.push(args[i]);
    words.push(w.key);
    for (let i = MOVE_KEYS; i < args.length; i++) words.push(args[i]);
    words.push(OP_CODES[w.op]);
    for (const a of w.args) words.push(a);
    words.push(w.args.length + 1);
    const call = client[FOLD_COMMAND] as NonNullable<BullClient[typeof FOLD_COMMAND]>;
    return call(words).then(
      ([reply, result]) => {
        if (Array.isArray(reply) && reply[0] === 'error') w.outcome(new LedgerCallError(`ledger ${w.op} of ${w.key} failed in Redis: ${reply[1]}`));
        else w.outcome(reply);
        if (result instanceof Error) throw result;
        return result ?? null;
      },
      (err: unknown) => {
        // Whether it ran is unknown: the completion goes again, ahead of whatever BullMQ sends next (a
        // completion of the same owner is accepted twice).
        void writer.ahead(w.key, w.args, w.outcome, w.op);
        throw err;
      },
    );
  };
  return true;
}
