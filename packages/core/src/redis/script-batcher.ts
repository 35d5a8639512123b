import type { RedisClient } from './connection.js';
import { slotOf } from './by-slot.js';
import { runScript, type Script } from './scripts.js';

/** One call of a batched script, waiting for its batch's reply. */
export interface BatchedCall<R> {
  /** Which of the script's operations (its dispatcher's code). */
  op: string;
  /** Its keys: on a cluster all in one slot (its lane is the first key's). */
  keys: readonly string[];
  args: readonly (string | number)[];
  resolve: (reply: R) => void;
  reject: (err: Error) => void;
}

/** How a batch is written as one script call, and what a failed entry is called. */
export interface BatchCodec<R> {
  encode(batch: readonly BatchedCall<R>[]): { keys: string[]; argv: (string | number)[] };
  /** The error for one entry: `reason` is Redis's message for that entry alone, or why it got no reply. */
  failed(call: BatchedCall<R>, reason: string): Error;
}

/**
 * Settles each entry of a batch from the script's replies, one per entry in order. An entry the script ran
 * under pcall and that failed comes back as `{'error', message}` and fails only its own caller; a whole call
 * that fails fails every entry.
 */
export function settleBatch<R>(batch: readonly BatchedCall<R>[], replies: Promise<unknown[]>, codec: BatchCodec<R>): Promise<void> {
  return replies.then(
    (list) => {
      for (let i = 0; i < batch.length; i++) {
        const call = batch[i] as BatchedCall<R>;
        const reply = list[i];
        if (Array.isArray(reply) && reply[0] === 'error') call.reject(codec.failed(call, `failed in Redis: ${String(reply[1])}`));
        else if (reply === undefined) call.reject(codec.failed(call, 'got no reply from its batch'));
        else call.resolve(reply as R);
      }
    },
    (err: unknown) => {
      for (const call of batch) call.reject(err instanceof Error ? err : codec.failed(call, String(err)));
    },
  );
}

/** The calls of one slot (one Redis: all of them) waiting for the batch in flight to return. */
interface Lane<R> {
  /** Its slot on a cluster; -1 for the one lane of one Redis. */
  slot: number;
  queue: BatchedCall<R>[];
  inFlight: boolean;
}

/**
 * Sends the calls of a script made to dispatch many (each entry under pcall) in batches, one batch in flight
 * at a time per lane: calls made while one is in flight leave together in the next, and a call made while
 * nothing is in flight leaves at once, alone, so an idle process pays no delay. Why: one script call per
 * operation costs Node a command object, its encoding and a reply to parse, and Redis a script call, for
 * each; a batch pays those once.
 *
 * On one Redis there is one lane. On a cluster each slot has its own lane: a master that stops answering
 * (frozen, or dead until its replica is promoted) holds up only the calls of its slots; a lane is dropped
 * once it is idle.
 */
export class ScriptBatcher<R> {
  private readonly single: Lane<R> = { slot: -1, queue: [], inFlight: false };
  private readonly lanes = new Map<number, Lane<R>>();
  /** Batches and calls sent so far (benches report the mean batch size). */
  readonly sent = { batches: 0, ops: 0 };

  constructor(
    private readonly redis: RedisClient,
    private readonly script: Script,
    private readonly codec: BatchCodec<R>,
    /** Caps a batch so one script call stays short and never holds Redis up noticeably. */
    private readonly maxBatch = 128,
  ) {}

  call(op: string, keys: readonly string[], args: readonly (string | number)[]): Promise<R> {
    return new Promise((resolve, reject) => {
      const lane = this.laneOf(keys[0] ?? '');
      lane.queue.push({ op, keys, args, resolve, reject });
      if (!lane.inFlight) this.send(lane);
    });
  }

  private laneOf(key: string): Lane<R> {
    if (!this.redis.isCluster) return this.single;
    const slot = slotOf(key);
    let lane = this.lanes.get(slot);
    if (!lane) this.lanes.set(slot, (lane = { slot, queue: [], inFlight: false }));
    return lane;
  }

  /** Sends the lane's next batch; an idle cluster lane is dropped once its batch returns. */
  private send(lane: Lane<R>): void {
    const batch = lane.queue.length <= this.maxBatch ? lane.queue : lane.queue.slice(0, this.maxBatch);
    lane.queue = batch === lane.queue ? [] : lane.queue.slice(this.maxBatch);
    lane.inFlight = true;
    this.sent.batches++;
    this.sent.ops += batch.length;
    const { keys, argv } = this.codec.encode(batch);
    // The lane stays busy until the turn that took the reply ends: the calls its callers make as they go on
    // (several promise hops later) leave together then, rather than the first alone and the rest behind it.
    void settleBatch(batch, runScript(this.redis, this.script, keys, argv) as Promise<unknown[]>, this.codec).then(() =>
      setImmediate(() => {
        if (lane.queue.length > 0) return this.send(lane);
        lane.inFlight = false;
        if (lane !== this.single) this.lanes.delete(lane.slot);
      }),
    );
  }
}
