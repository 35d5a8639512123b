import type { RedisClient } from '@tickwork/core';
import { COMPLETE_AHEAD_LUA, LEDGER_LUA } from './ledger-lua.js';
import { groupBySlot } from '@tickwork/core';
import { defineScript, ScriptBatcher, settleBatch, type BatchCodec, type BatchedCall } from '@tickwork/core';
import { holdUntilTurnEnds, sendFlat } from '@tickwork/core';

/**
 * How ledger operations reach Redis. Two paths, both batching the operations of many runs into one
 * script call:
 *
 * - LedgerBatcher, on the ledger's own connection, for everything that needs its answer before going on
 *   (claim, renew, steps, release). One batch is in flight at a time (per slot on a cluster); operations
 *   made meanwhile leave together in the next one. An operation made while nothing is in flight leaves at
 *   once, alone, so an idle worker pays no delay.
 *
 * - CompletionWriter, on the connection the queue acknowledges jobs on (BullMQ's moveToFinished), for
 *   recording a run's result. Redis runs one connection's commands in the order they were sent, so a
 *   completion written there before the job's acknowledgement runs before it: a job is never acknowledged
 *   without its result recorded, and the worker need not wait a round trip for the reply first.
 *
 * Why batch at all: a no-op BullMQ job costs about one Redis round trip (BullMQ fetches the next job in the
 * script that finishes the last), and on a small machine every extra command is CPU on both sides (a
 * command object, encoding and a reply to parse in Node; a script call in Redis). Measured with
 * `pnpm bench`: one script call per operation cost the ledger about twice what batching costs.
 *
 * Each entry of a batch runs under pcall, so one bad entry fails only its own caller. Redis Cluster: the
 * ledger batches per slot, and the completions written ahead are split per slot (redis/by-slot.ts), one
 * script call per slot.
 * A run's record and step results share its queue's slot with the queue's BullMQ keys
 * (redis/keyspace.ts), so a completion written ahead goes to the node, and on the connection, that
 * acknowledges the job. On one Redis a batch is one call, as always.
 */

export type LedgerOp = 'claim' | 'renew' | 'step' | 'complete' | 'completeUnclaimed' | 'release';

export const OP_CODES: Record<LedgerOp, string> = { claim: 'c', renew: 'r', step: 's', complete: 'd', completeUnclaimed: 'f', release: 'x' };

export type LedgerReply = number | string[];

export class LedgerCallError extends Error {
  override readonly name = 'LedgerCallError';
}

/** A ledger operation in a batch: `op` is its LedgerOp, `keys` its record key alone. */
type Entry = BatchedCall<LedgerReply>;

const entryKey = (e: Entry): string => e.keys[0] as string;

/** A batch as LEDGER_LUA and COMPLETE_AHEAD_LUA read it: per operation its record key, and its code, argument count and arguments. */
const codec: BatchCodec<LedgerReply> = {
  encode(batch) {
    const keys: string[] = [];
    const argv: (string | number)[] = [];
    for (const e of batch) {
      keys.push(e.keys[0] as string);
      argv.push(OP_CODES[e.op as LedgerOp], e.args.length, ...e.args);
    }
    return { keys, argv };
  },
  failed: (e, reason) => new LedgerCallError(`ledger ${e.op} of ${e.keys[0]} ${reason}`),
};

const LEDGER_SCRIPT = defineScript(LEDGER_LUA);

/**
 * Sends ledger operations in batches on the ledger's connection, one batch in flight at a time per lane
 * (ScriptBatcher). On a cluster each slot has its own lane: a run's keys share its queue's slot
 * (redis/keyspace.ts), so a cluster has about one lane per queue.
 */
export class LedgerBatcher {
  private readonly batcher: ScriptBatcher<LedgerReply>;
  /** Batches and operations sent so far (the bench reports the mean batch size). */
  readonly sent: { batches: number; ops: number };

  constructor(redis: RedisClient, maxBatch = 128) {
    this.batcher = new ScriptBatcher(redis, LEDGER_SCRIPT, codec, maxBatch);
    this.sent = this.batcher.sent;
  }

  call(op: LedgerOp, key: string, args: (string | number)[]): Promise<LedgerReply> {
    return this.batcher.call(op, [key], args);
  }
}

/** What became of a completion written ahead: the script's reply (1, or 0 when the lease was lost), or why it failed. */
export type AheadOutcome = (reply: LedgerReply | Error) => void;
/** The operations a completion written ahead (or folded into the acknowledgement) can be. */
export type AheadOp = 'complete' | 'completeUnclaimed';

/**
 * Completions written ahead in one script call at most; a call this full goes at once, uncorked (see
 * CompletionWriter). 16 keeps the script's fixed cost in Redis small per completion.
 */
const GROUP = 16;

/**
 * The completions' script and its SHA1. Where the script itself goes (SCRIPT LOAD, EVAL), it goes as a
 * string, never a Buffer: ioredis builds a command holding a Buffer argument from Buffers of every argument,
 * which cost more than twice the time of the same command of strings (measured: 50 against 22 µs for 16
 * completions).
 */
const COMPLETE_AHEAD = defineScript(COMPLETE_AHEAD_LUA);

/**
 * Writes completions on the connection the queue acknowledges jobs on, ahead of the acknowledgement (see
 * the file comment). The promise `complete` returns resolves once the script call holding the completion
 * is handed to ioredis, which keeps one connection's commands in order (also across a reconnect: its
 * offline queue replays them in order); the caller acknowledges only after that. The reply comes later,
 * to `outcome`.
 *
 * When a call goes:
 * - a few completions (a worker at low concurrency, or the tail of a turn) go together once the microtask
 *   queue drains (a process.nextTick), and the connection is corked until the turn ends (cork.ts), so the
 *   call and the acknowledgements BullMQ sends right after it leave in one system call;
 * - every GROUP completions go at once, uncorked. At high concurrency the jobs whose replies arrived in
 *   one socket read finish in one turn; written in one system call at its end, they came back from Redis
 *   in one reply too, and the worker and Redis took turns (each idle while the other worked) instead of
 *   working at once, as they do for a bare BullMQ worker, whose acknowledgements leave one by one.
 */
export class CompletionWriter {
  /** The SHA1 its calls name the script by (EVALSHA), for tests that watch them. */
  static readonly scriptSha: string = COMPLETE_AHEAD.sha;
  private pending: Entry[] = [];
  /** Script calls and completions sent so far (the bench reports completions per call). */
  readonly sent = { batches: 0, ops: 0 };
  private written: Promise<void> | undefined;
  private markWritten: (() => void) | undefined;
  /**
   * Whether SCRIPT LOAD of the script has gone out on this connection since it last became ready. Redis
   * runs a connection's commands in order, so an EVALSHA sent after it finds the script; 'ready' (every
   * reconnect, to a restarted or promoted server perhaps) clears it, and commands queued meanwhile go out
   * after the handler has run.
   */
  private loaded = false;

  constructor(private readonly redis: RedisClient) {
    if (!redis.isCluster) redis.on('ready', () => (this.loaded = false));
  }

  /**
   * Set by foldAcks (ack-fold.ts) on a BullMQ worker's connection: a completion whose job is known (`jobKey`;
   * a record in the job's hash is its job's) rides in that job's acknowledgement instead.
   */
  fold: { take(jobKey: string, key: string, op: AheadOp, args: (string | number)[], outcome: AheadOutcome, sole: boolean): boolean } | undefined;

  /**
   * `jobKey`: the BullMQ job (its hash's key) whose acknowledgement follows, when it is known; `sole`: that
   * job's delivery is known to be its only one (ack-ride.ts). Returns what to wait for before acknowledging:
   * nothing (undefined) when the completion rides in the acknowledgement.
   */
  complete(key: string, args: (string | number)[], outcome: AheadOutcome, op: AheadOp = 'complete', jobKey?: string, sole = false): Promise<void> | undefined {
    const job = jobKey ?? (args[0] === 'j' ? key : undefined);
    if (this.fold && job !== undefined && this.fold.take(job, key, op, args, outcome, sole)) return undefined;
    return this.ahead(key, args, outcome, op);
  }

  /** Writes the completion ahead of the acknowledgement (see the class comment). */
  ahead(key: string, args: (string | number)[], outcome: AheadOutcome, op: AheadOp): Promise<void> {
    if (!this.written) {
      this.written = new Promise((resolve) => (this.markWritten = resolve));
      process.nextTick(() => this.flush(true));
    }
    this.pending.push({ op, keys: [key], args, resolve: outcome, reject: outcome });
    const written = this.written;
    if (this.pending.length >= GROUP) this.flush(false);
    return written;
  }

  private flush(cork: boolean): void {
    const batch = this.pending;
    if (batch.length === 0) return; // a full group went already
    const markWritten = this.markWritten as () => void;
    this.pending = [];
    this.written = undefined;
    this.sent.batches++;
    this.sent.ops += batch.length;
    if (cork) holdUntilTurnEnds(this.redis);
    if (this.redis.isCluster) {
      // One call per slot (each lands on the node, and connection, that acknowledges its jobs). EVAL: a
      // cluster client has no one connection a SCRIPT LOAD could go ahead on.
      for (const group of groupBySlot(this.redis, batch, entryKey)) {
        const { keys, argv } = codec.encode(group);
        void settleBatch(group, sendFlat(this.redis, 'eval', [COMPLETE_AHEAD.lua, keys.length, ...keys, ...argv]) as Promise<LedgerReply[]>, codec);
      }
    } else {
      if (!this.loaded) {
        this.loaded = true;
        void this.redis.script('LOAD', COMPLETE_AHEAD.lua).catch(() => (this.loaded = false));
      }
      const { keys, argv } = codec.encode(batch);
      void settleBatch(batch, this.evalsha(keys, argv), codec);
    }
    markWritten();
  }

  /**
   * EVALSHA after the connection's SCRIPT LOAD. NOSCRIPT is left: only an operator's SCRIPT FLUSH on a
   * live connection answers it, and then the results are written with EVAL, after their acknowledgements.
   */
  private evalsha(keys: string[], argv: (string | number)[]): Promise<LedgerReply[]> {
    return (sendFlat(this.redis, 'evalsha', [COMPLETE_AHEAD.sha, keys.length, ...keys, ...argv]) as Promise<LedgerReply[]>).catch((err: unknown) => {
      if (!(err instanceof Error) || !err.message.includes('NOSCRIPT')) throw err;
      this.loaded = false;
      return sendFlat(this.redis, 'eval', [COMPLETE_AHEAD.lua, keys.length, ...keys, ...argv]) as Promise<LedgerReply[]>;
    });
  }
}

const writers = new WeakMap<RedisClient, CompletionWriter>();

/** The writer that records results ahead of acknowledgements on `redis`: one per connection, so its batches share it. */
export function completionWriter(redis: RedisClient): CompletionWriter {
  let writer = writers.get(redis);
  if (!writer) writers.set(redis, (writer = new CompletionWriter(redis)));
  return writer;
}
