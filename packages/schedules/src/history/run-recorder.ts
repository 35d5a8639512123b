import type { AnyJob, Delivery, Logger, RedisClient } from '@tickwork/core';
import { isoNow, isoOfMs, manualOccurrenceKey, occurrenceKey, ScriptBatcher, type BatchCodec } from '@tickwork/core';
import type { ClaimVia, LedgerReply, OverlapEnterCall } from '@tickwork/exactly-once';
import { HistoryWriteError } from '../errors.js';
import { HISTORY_BATCH } from '../store/lua.js';
import { shardKeys, shardOf } from '../store/shard-keys.js';
import { HISTORY_CAP, mergeCall, placeOf, type OccurrenceOutcome, type OccurrenceRecord, type OccurrenceTrigger, type OverlapLeave } from './history.js';

/**
 * The worker side of a schedule's history: what a run of a scheduled job records (its start with the
 * schedule's check, its end, its skips), its writes batched per connection. The records and their readers
 * are in history.ts.
 */

/** How long a run keeps retrying a history write that failed (Redis unreachable) before giving up on it. */
export const HISTORY_RETRY_MS = 30_000;
/**
 * A run's start (`startedAt`, `attempts`) is written with its next record when that comes within this time:
 * a run that ends sooner (most do) costs one record write, not two. A run still going then has its start
 * written on its own, so the history shows it running from then on. Not for a watched schedule's runs
 * (catalog schedules, runtime ones with `watch: true`): the slow-run watchdog reads their start.
 */
export const START_RECORD_AFTER_MS = 1000;

/** What the start with the overlap entry decided: the gate's verdict (entered when 'ok'), or the entry's. */
export type StartEntered = { verdict: StartVerdict } | { entered: string[] };

/**
 * A run's history writes go through one batcher per connection (HISTORY_BATCH): at a herd's rate the starts
 * and ends of many runs leave in one script call, where one call each cost Node and Redis a call each.
 */
const historyCodec: BatchCodec<unknown> = {
  encode(batch) {
    const keys: string[] = [];
    const argv: (string | number)[] = [];
    for (const e of batch) {
      keys.push(...e.keys);
      argv.push(e.op, e.keys.length, e.args.length, ...e.args);
    }
    return { keys, argv };
  },
  // The occurrence's id: its start's argument 2 (after claimStarting's own and the claim's, for 'c').
  failed: (e, reason) => new HistoryWriteError(String(e.op === 'c' ? e.args[3 + Number(e.args[1])] : e.args[1]), reason),
};
const batchers = new WeakMap<RedisClient, ScriptBatcher<unknown>>();

function historyWrites(redis: RedisClient): ScriptBatcher<unknown> {
  let batcher = batchers.get(redis);
  if (!batcher) batchers.set(redis, (batcher = new ScriptBatcher(redis, HISTORY_BATCH, historyCodec)));
  return batcher;
}

/** Why a scheduled run does not run at all (its start's gate): its schedule is gone, changed, or paused. */
export type StartVerdict = 'ok' | 'removed' | 'changed' | 'paused';

/** The worker side: what a run of a scheduled job records. Never throws (history must not fail a job). */
export interface RunRecorder {
  /** Records the start; for occurrences of the schedule store also checks the schedule (lua.ts startRun). */
  started(attempt: number): Promise<StartVerdict>;
  /**
   * started, with the run's overlap entry in the same call (lua.ts startEntering; single Redis only). Its verdict
   * is kept: a later `started` returns it without a call. Rejects on a failed call (the caller enters and
   * starts on its own then, each with its usual handling of errors); `entered` is OVERLAP_ENTER_FN's reply.
   */
  startedEntering(attempt: number, enter: OverlapEnterCall): Promise<StartEntered>;
  /**
   * The run's claim with its start (lua.ts claimStarting; single Redis only), as the ledger's ClaimVia: the
   * claim answers as the ledger's own would, and when it claimed a new run, its start (with the overlap entry
   * when `enter` is given) is kept for the run's `started` or `startedEntering`, which then make no call.
   * A claim that started nothing leaves them to make their own. Rejects on a failed call (the ledger then
   * claims on its own: a claim sent again by the same owner is claimed again).
   */
  claimStarting(attempt: number, enter?: OverlapEnterCall): ClaimVia;
  /** `leave`: frees the run's overlap slot in the same call; resolves true when the slot was freed by it. */
  succeeded(leave?: OverlapLeave): Promise<boolean>;
  /** `final`: no retry follows, so the occurrence's outcome is `failed`. `leave` as for succeeded. */
  failed(err: unknown, final: boolean, leave?: OverlapLeave): Promise<boolean>;
  /** For the overlap policy: this occurrence is not run because an earlier run is still active. */
  skippedOverlap(reason?: string): Promise<void>;
  /** For the missed-run policy at the worker: this late occurrence is not run. */
  missed(reason: string): Promise<void>;
  /** This occurrence started late and runs as a catch-up: its trigger becomes `catch-up`, success `caught-up`. */
  catchingUp(): Promise<void>;
  /** An operator cancelled the run; `reason` is the failed reason (`cancelled by ...`). */
  cancelled(reason: string): Promise<void>;
}

/**
 * A recorder for the runs of a schedule: the occurrences its scheduler enqueued (on time or catch-up), its
 * manual runs (runNow: the dashboard's "run now", `tickwork schedules run`) and a re-drive of a catalog
 * schedule's run from the dead-letter queue (recorded as manual). Undefined for every other run, an ad-hoc
 * enqueue of a scheduled job included: such a run is not the schedule's, and must not move its history or
 * health (one failing ad-hoc run would otherwise make the schedule `failing` and page someone).
 *
 * Redis Cluster: a schedule's history stays in its schedule shard (`{sched:<k>}`), not under its queue's
 * tag, because the start gate (lua.ts startRun) reads the definition and writes the history in one script, and
 * the dispatcher commits history with its claims. So on a cluster these writes go to the shard's master,
 * on another connection than the job's acknowledgement. The order still holds: the worker awaits each
 * history write (execute stage) before it returns the result, so the write is done before the result is
 * written ahead and the job acknowledged. What is lost is only the shared connection (one more node).
 */
export function runRecorder(redis: RedisClient, prefix: string, job: AnyJob, delivery: Delivery, log: Logger | (() => Logger)): RunRecorder | undefined {
  const scheduled = delivery.scheduled;
  if (!scheduled && !(job.schedule && delivery.redrive?.scheduleId === job.name)) return undefined;
  const schedule = scheduled?.schedule ?? job.name;
  const nominalMs = scheduled?.nominal ?? Date.now();
  const manual = !scheduled || scheduled.m !== undefined;
  const trigger: OccurrenceTrigger = manual ? 'manual' : scheduled.catchUp ? 'catch-up' : 'schedule';
  const id = !scheduled
    ? `${schedule}@manual-${delivery.id}`
    : scheduled.m !== undefined
      ? manualOccurrenceKey(schedule, scheduled.m)
      : occurrenceKey(schedule, new Date(nominalMs));
  const cap = scheduled?.h ?? HISTORY_CAP;
  // The job that runs it, where not the one the scheduler recorded: a batch's (occurrence-batch.ts), or its own once it left one.
  const runBy = delivery.batch ?? (scheduled?.a !== undefined ? delivery.id : undefined);
  const writes = historyWrites(redis);
  // Runs of watched schedules enter the slow-run index at start and leave it when they end.
  const running = scheduled?.sa !== undefined ? id : undefined;
  const defaults: Partial<OccurrenceRecord> = { id, schedule, nominal: isoOfMs(nominalMs), trigger, jobId: delivery.id };
  const shard = shardKeys(prefix, shardOf(schedule));
  const place = placeOf(prefix, schedule, defaults, running === undefined ? undefined : { key: shard.running, member: running });
  // A Redis blip must not leave an occurrence `started` forever while its run completes: the write is
  // retried (merging is idempotent) until Redis is back or HISTORY_RETRY_MS has passed. The job cannot be
  // acknowledged while Redis is down anyway, so waiting here holds nothing up that could proceed.
  const retried = async <T>(write: () => Promise<T>, fallback: T): Promise<T> => {
    const deadline = Date.now() + HISTORY_RETRY_MS;
    for (let delay = 100; ; delay = Math.min(delay * 2, 2000)) {
      try {
        return await write();
      } catch (err) {
        if (Date.now() + delay > deadline) {
          // `log` may be a getter: a run's logger is made only when a line is written (job-run.ts).
          (typeof log === 'function' ? log() : log).warn({ err: { message: (err as Error).message }, occurrence: id }, 'could not record schedule history');
          return fallback;
        }
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  };
  /** The run's start once its gate let it in, until written: with the run's next record, or on a timer. */
  let unwritten: Partial<OccurrenceRecord> | undefined;
  let startTimer: ReturnType<typeof setTimeout> | undefined;
  const takeStart = (): Partial<OccurrenceRecord> | undefined => {
    const start = unwritten;
    if (start) {
      unwritten = undefined;
      clearTimeout(startTimer);
    }
    return start;
  };
  /** After a start call: holds the start startCall left unwritten, when the gate let the run in. */
  const holdStart = (verdict: string | undefined, start: Partial<OccurrenceRecord> | undefined) => {
    if (verdict !== 'ok' || !start) return;
    clearTimeout(startTimer);
    unwritten = start;
    startTimer = setTimeout(() => {
      const held = takeStart();
      if (held) void note(held);
    }, START_RECORD_AFTER_MS);
    startTimer.unref();
  };
  // The reply (the merged record) is not read here: 'quiet' spares Redis encoding it and the worker parsing it.
  const merge = (patch: Partial<OccurrenceRecord>, copyTo?: 'lastSuccess' | 'lastFailure', leave?: OverlapLeave) => {
    const start = takeStart();
    const full = start ? { ...start, ...patch } : patch;
    return retried(async () => {
      const { keys, argv } = mergeCall(place, id, nominalMs, full, copyTo, cap, leave, true);
      return Number(await writes.call('m', keys, argv)) === 1;
    }, false);
  };
  const note = async (patch: Partial<OccurrenceRecord>) => {
    await merge(patch);
  };
  const now = isoNow;
  let successOutcome: OccurrenceOutcome = trigger === 'catch-up' ? 'caught-up' : trigger === 'manual' ? 'manual' : 'completed';
  /**
   * startRun's keys and arguments (lua.ts), and the start it leaves unwritten (an unwatched run's): the script
   * records a refusal by the gate, and the caller holds the start of a run the gate let in (holdStart).
   */
  const startCall = (attempt: number) => {
    const k = place.keys;
    // The gate applies to planned occurrences of the store (they carry the version), not to manual runs.
    const version = scheduled?.v !== undefined && !manual ? String(scheduled.v) : '';
    const slowAt = scheduled?.sa !== undefined ? String(Date.now() + scheduled.sa) : '';
    const at = now();
    const start = runBy === undefined ? { startedAt: at, attempts: attempt } : { startedAt: at, attempts: attempt, jobId: runBy };
    // A watched run's start is written at once: the slow-run watchdog reads it (runs of watched schedules are few).
    const held = running === undefined;
    const argv: (string | number)[] = [cap, id, nominalMs, held ? '' : JSON.stringify(start), place.defaults, schedule, version, nominalMs, slowAt, at];
    return { keys: [k.history, k.records, shard.defs, shard.running], argv, start: held ? start : undefined };
  };
  /** startedEntering's verdict (or claimStarting's), for the run's `started` that follows it. */
  let startedAs: StartVerdict | undefined;
  /** claimStarting's overlap entry when it did not enter ('wait' or 'skip'), for the run's `startedEntering`. */
  let enteredAs: string[] | undefined;
  return {
    started: (attempt) => {
      if (startedAs !== undefined) return Promise.resolve(startedAs);
      return retried(async () => {
        const { keys, argv, start } = startCall(attempt);
        const verdict = (await writes.call('s', keys, argv)) as StartVerdict;
        holdStart(verdict, start);
        return verdict;
      }, 'ok' as StartVerdict);
    },
    startedEntering: async (attempt, enter) => {
      if (enteredAs) return { entered: enteredAs };
      if (startedAs !== undefined) return { verdict: startedAs };
      const { keys, argv, start } = startCall(attempt);
      const reply = (await writes.call('e', [...keys, ...enter.keys], [...argv, ...enter.argv])) as string[];
      const [kind] = reply;
      if (kind === 'wait' || kind === 'skip') return { entered: reply };
      startedAs = kind as StartVerdict;
      holdStart(startedAs, start);
      return { verdict: startedAs };
    },
    claimStarting: (attempt, enter) => async (record, claimArgs) => {
      const { keys, argv, start } = startCall(attempt);
      const reply = (await writes.call(
        'c',
        enter ? [record, ...keys, ...enter.keys] : [record, ...keys],
        enter ? ['e', claimArgs.length, ...claimArgs, ...argv, ...enter.argv] : ['s', claimArgs.length, ...claimArgs, ...argv],
      )) as [string, ...unknown[]];
      const [kind] = reply;
      if (kind === 'claim') return reply[1] as LedgerReply;
      if (kind === 'wait' || kind === 'skip') enteredAs = reply as string[];
      else startedAs = kind as StartVerdict;
      holdStart(startedAs, start);
      return 1; // claimed, a new run: what the ledger's own claim answers
    },
    succeeded: (leave) => merge({ endedAt: now(), outcome: successOutcome }, 'lastSuccess', leave),
    failed: (err, final, leave) =>
      final
        ? merge({ endedAt: now(), outcome: 'failed', error: (err as Error)?.message ?? String(err) }, 'lastFailure', leave)
        : merge({ error: (err as Error)?.message ?? String(err) }, undefined, leave),
    skippedOverlap: (reason) => note({ endedAt: now(), outcome: 'skipped-overlap', ...(reason && { error: reason }) }),
    missed: (reason) => note({ endedAt: now(), outcome: 'missed', error: reason }),
    cancelled: (reason) => note({ endedAt: now(), outcome: 'cancelled', error: reason }),
    catchingUp: () => {
      successOutcome = 'caught-up';
      return note({ trigger: 'catch-up' });
    },
  };
}
