import { randomBytes } from 'node:crypto';
import type { RedisClient } from '@tickwork/core';
import type { Catalog } from '@tickwork/core';
import type { Logger } from '@tickwork/core';
import type { QueueSet } from '@tickwork/core';
import { pipelineBySlot, type SlotCommand } from '@tickwork/core';
import { runScriptMany, type ScriptCall } from '@tickwork/core';
import { historyKeysOf, SCHEDULE_SHARDS, shardKeys } from '../store/shard-keys.js';
import { CLAIM, COMMIT } from '../store/lua.js';
import { addOccurrenceJobs } from './occurrence-jobs.js';
import type { Commit, DispatchResult } from './types.js';
import { createFireLane, MAX_HEAD_START_MS } from './fire-lane.js';
import type { Claimed } from './types.js';
import { planClaim, type PlanContext } from './plan-claim.js';
import { createLiftLane, LIFT_SLACK_MS, type AheadLift } from './lift-lane.js';

export interface DispatcherOptions {
  redis: RedisClient;
  queues: QueueSet;
  catalog: Catalog;
  log: Logger;
  /** An occurrence noticed later than this after its time is judged by its schedule's missed policy. */
  graceMs: number;
  /** Occurrences due within this are claimed ahead and added at their exact time, less the head start (fire-lane.ts). */
  lookaheadMs: number;
  /**
   * Adding ahead (lift-lane.ts): occurrences due within `ms` (more than the look-ahead) are claimed, added
   * as delayed jobs and committed at once, and `lift` moves them to the head of the wait list at their time.
   * A herd's claims, adds and commits are then done before its minute. `queues`: the queues every sweep
   * lifts. Without it, occurrences are claimed only within the look-ahead.
   */
  addAhead?: { ms: number; lift: AheadLift; queues: () => readonly string[] };
  /**
   * How long before its time an on-time occurrence is added (fire-lane.ts; at most MAX_HEAD_START_MS), or
   * a function read at each claim round (the scheduler's HeadStart: SCHEDULE_HEAD_START_MS while every
   * worker holds early occurrences, head-start.ts). Default 0: added at its exact time.
   */
  headStartMs?: number | (() => number);
  /**
   * Occurrences added ahead that share a job and a time go in batches of up to this many (occurrence-jobs.ts),
   * or a function read at each claim round (the scheduler's SCHEDULE_BATCH_MAX while every worker runs
   * batches, head-start.ts). Default 1: each occurrence a job of its own.
   */
  batchMax?: number | (() => number);
  /** How long a claim is held before another replica may take it over (this one died mid-way). */
  leaseMs?: number;
  /** Entries claimed per shard per round. */
  batch?: number;
  /** Rounds per tick while shards return full batches (after an outage), so one tick stays bounded. */
  maxRounds?: number;
  /**
   * Whether `tick` waits for the occurrences it holds until their time (see fire-lane.ts). The scheduler's
   * loop does not (false: the next tick claims on while they wait, and `idle()` awaits them on shutdown);
   * the default true suits a caller that checks the queue right after a tick.
   */
  waitHeld?: boolean;
  /**
   * Redis Cluster: how long a tick waits for a shard whose master does not answer (frozen, or dead until
   * its replica is promoted) before it returns without it. That shard's rounds go on by themselves, and
   * later ticks skip it until they end, so the other shards keep firing on time.
   */
  stuckShardMs?: number;
  /**
   * Occurrences added later than this after their planned time (the process was frozen or starved) are
   * added only where their claim still holds: a replica judged dead meanwhile has had its claims released
   * (takeover.ts). Below the scheduler registry's dead-after time. Default DEFAULT_STALE_AFTER_MS.
   */
  staleAfterMs?: number;
}


export const DEFAULT_CLAIM_LEASE_MS = 10_000;
export const DEFAULT_CLAIM_BATCH = 200;
/**
 * Adding ahead, a claim looks at most this many batches' worth of entries in the window: schedules too
 * frequent to add ahead wait there for the look-ahead (skipped), and must not hide the ones behind them.
 */
const AHEAD_SCAN = 4;
export const DEFAULT_STALE_AFTER_MS = 1000;
const DEFAULT_STUCK_SHARD_MS = 500;

const emptyResult = (): DispatchResult => ({ claimed: 0, takenOver: 0, enqueued: 0, caughtUp: 0, missed: 0, skippedPaused: 0, committed: 0, rounds: 0 });

function addInto(into: DispatchResult, from: DispatchResult): void {
  for (const k of Object.keys(into) as (keyof DispatchResult)[]) into[k] += from[k];
}


/**
 * The dispatcher: claim -> enqueue -> commit, O(occurrences due) per tick. One pipelined round trip claims
 * due entries on every shard (starting at a random shard, so replicas spread); each claimed entry is planned
 * with the pure planner (missed/catch-up policies, grace) from its nominal time, its runs are added with
 * deterministic job ids, and one COMMIT per shard puts the next occurrence back in the due index and writes
 * the history records, only where this lease still holds. A replica that dies after claiming leaves its claims
 * until a live scheduler releases them (it stopped beating: takeover.ts) or their lease expires; another
 * re-plans from the same nominal: same job ids (adding is a no-op while the job exists), same occurrence keys
 * (the ledger suppresses a second effect). Its lease tokens are `<replica>.<seq>`, `replica` this dispatcher's
 * id in the scheduler registry.
 */
export function createDispatcher(opts: DispatcherOptions) {
  const { redis, queues, catalog, log } = opts;
  const prefix = queues.prefix;
  const leaseMs = opts.leaseMs ?? DEFAULT_CLAIM_LEASE_MS;
  const batch = opts.batch ?? DEFAULT_CLAIM_BATCH;
  const maxRounds = opts.maxRounds ?? 8;
  const stuckShardMs = opts.stuckShardMs ?? DEFAULT_STUCK_SHARD_MS;
  const staleAfterMs = opts.staleAfterMs ?? DEFAULT_STALE_AFTER_MS;
  const headStart = opts.headStartMs ?? 0;
  const headStartNow = (): number => Math.min(Math.max(typeof headStart === 'function' ? headStart() : headStart, 0), MAX_HEAD_START_MS);
  const replica = randomBytes(4).toString('hex');
  let seq = 0;
  const ahead = opts.addAhead && opts.addAhead.ms > opts.lookaheadMs ? opts.addAhead : undefined;
  const planning: PlanContext = { catalog, log, graceMs: opts.graceMs, lookaheadMs: opts.lookaheadMs, addAheadMs: ahead?.ms };
  const lifts = ahead && createLiftLane({ lift: ahead.lift, queues: ahead.queues, log });

  /** Every shard, starting at a random one, so replicas spread. */
  const shardOrder = (): number[] => {
    const start = Math.floor(Math.random() * SCHEDULE_SHARDS);
    return Array.from({ length: SCHEDULE_SHARDS }, (_, i) => (start + i) % SCHEDULE_SHARDS);
  };

  /**
   * Claim rounds on `shards` until none returns a full batch (at most maxRounds). A round's claim and plan
   * overlap the previous round's adds and commit (at most one round firing while the next claims): the
   * scheduler plans while Redis adds, so a herd's claims are not paced by one side waiting on the other.
   * Rounds claim disjoint entries (a claimed entry leaves the due index), so their order does not matter.
   */
  async function rounds(shards: number[], now: number, startedAt: number, result: DispatchResult): Promise<void> {
    let firing: Promise<void> | undefined;
    try {
      for (let r = 0; r < maxRounds; r++) {
        result.rounds++;
        const before = result.claimed;
        const { full, fired } = await round(shards, now, startedAt, result);
        const previous = firing;
        firing = fired;
        if (previous) await previous;
        if (!full || result.claimed === before) break;
      }
    } catch (err) {
      // The tick fails with its first error; a round still firing ends first, its own error logged.
      await firing?.catch((e: unknown) => log.error({ err: { message: (e as Error).message } }, 'could not add a claim round\'s occurrences; they are re-claimed when the lease expires'));
      throw err;
    }
    await firing;
  }

  /** One claim round: claims and plans, and starts adding what is due (`fired`, settled once added and committed). */
  async function round(shards: number[], now: number, startedAt: number, result: DispatchResult): Promise<{ full: boolean; fired: Promise<void> | undefined }> {
    const token = `${replica}.${++seq}`;
    // Adding ahead, the entries due in the window beyond the look-ahead too, among the first AHEAD_SCAN of them.
    const claimArgs = [now, now + opts.lookaheadMs, batch, now + leaseMs, token, ...(ahead ? [now + ahead.ms, batch * AHEAD_SCAN] : [])];
    const replies = await runScriptMany(
      redis,
      CLAIM,
      shards.map((s): ScriptCall => {
        const k = shardKeys(prefix, s);
        return { keys: [k.due, k.claimed, k.inflight, k.defs, k.notAhead], argv: claimArgs };
      }),
    );
    let full = false;
    const claimed: Claimed[] = [];
    /** What the taken-over entries' plans decided (the round's one log line for them). */
    const tookOver = emptyResult();
    replies.forEach((reply, i) => {
      // How many entries were taken over (they come first), then (id, nominal, definition) triples.
      const [takenOver, ...flat] = reply as [number, ...string[]];
      if (flat.length / 3 >= batch) full = true;
      const shard = shards[i] as number;
      for (let j = 0; j < flat.length; j += 3) {
        const entry = { id: flat[j] as string, nominal: Number(flat[j + 1]), raw: flat[j + 2] as string, takenOver: j / 3 < takenOver };
        const runs: Claimed['runs'] = [];
        const commit = planClaim(planning, entry, now, runs, entry.takenOver ? tookOver : result);
        claimed.push({ shard, commit, runs });
        result.claimed++;
        if (entry.takenOver) tookOver.takenOver++;
      }
    });
    if (tookOver.takenOver > 0) {
      log.info(
        { claims: tookOver.takenOver, enqueued: tookOver.enqueued, missed: tookOver.missed, caughtUp: tookOver.caughtUp },
        'took over claims a dead or stalled scheduler held: each schedule resumes with its next run, and its missed policy judges the occurrences due meanwhile',
      );
      addInto(result, tookOver);
    }
    if (claimed.length === 0) return { full: false, fired: undefined };
    const fired = lane.fire(claimed, now, startedAt, token, result, headStartNow());
    // Awaited by `rounds` (after the next round's claim): until then a failure is not unhandled.
    fired.catch(() => undefined);
    return { full, fired };
  }

  /**
   * Adds a group's runs, then commits its claims (only where this round's lease still holds). A group that
   * fires late by more than staleAfterMs first checks which of its claims still hold: this process was frozen
   * or starved, and a live scheduler may have judged it dead and another re-planned those schedules; their
   * runs are that one's to add now (one round trip, only then).
   */
  async function fire(group: readonly Claimed[], token: string, headStartMs: number, lateMs: number): Promise<number> {
    if (lateMs > staleAfterMs) group = await stillHeld(group, token, lateMs);
    if (group.length === 0) return 0;
    const added = lifts && { slackMs: LIFT_SLACK_MS, jobs: new Map<string, { id: string; at: number }[]>() };
    const batchMax = typeof opts.batchMax === 'function' ? opts.batchMax() : (opts.batchMax ?? 1);
    await addOccurrenceJobs(queues, catalog, group.flatMap((c) => c.runs), Date.now(), headStartMs, added, batchMax);
    // Noted before the commit: a claim committed without its note would leave its job to BullMQ's promotion.
    if (added && added.jobs.size > 0) await lifts.note(added.jobs);
    const byShard = new Map<number, Commit[]>();
    for (const c of group) {
      let list = byShard.get(c.shard);
      if (!list) byShard.set(c.shard, (list = []));
      list.push(c.commit);
    }
    let committed = 0;
    for (const n of await runScriptMany(redis, COMMIT, [...byShard].map(([shard, list]) => commitCall(shard, token, list)))) committed += Number(n);
    return committed;
  }
  async function stillHeld(group: readonly Claimed[], token: string, lateMs: number): Promise<Claimed[]> {
    const replies = await pipelineBySlot(redis, group.map((c): SlotCommand => ['hget', shardKeys(prefix, c.shard).inflight, c.commit.id]));
    const held = group.filter((_, i) => String(replies[i]?.[1] ?? '').endsWith(`:${token}`));
    if (held.length < group.length) {
      log.warn({ claims: group.length - held.length, lateMs }, 'this scheduler stalled holding occurrences and another took their claims over; it leaves them to that one');
    }
    return held;
  }
  // Adding ahead, what is due beyond the look-ahead is added at once (delayed, then lifted); else only runs
  // due so far ahead that holding them would near the lease are.
  const lane = createFireLane({ fire, log, waitHeld: opts.waitHeld ?? true, maxHoldMs: ahead ? opts.lookaheadMs : leaseMs / 2 });

  function commitCall(shard: number, token: string, list: readonly Commit[]): ScriptCall {
    const k = shardKeys(prefix, shard);
    const keys = [k.due, k.claimed, k.inflight, k.watch, k.notAhead];
    const argv: (string | number)[] = [token, list.length];
    for (const c of list) {
      const h = historyKeysOf(prefix, c.id);
      keys.push(h.history, h.records);
      argv.push(c.id, c.next ?? '', c.watchDeadline ?? '', keys.length - 1, c.cap, c.notAhead ? '1' : '', c.records.length);
      for (const r of c.records) argv.push(r.id, r.score, JSON.stringify(r.patch), JSON.stringify(r.defaults));
    }
    return { keys, argv };
  }

  /** Cluster: shards whose rounds still run from an earlier tick; later ticks skip them until they end. */
  const busy = new Map<number, Promise<void>>();
  /** What shard rounds that ended after their tick had returned did: counted in the next tick's result. */
  let carried = emptyResult();

  /**
   * A tick on a cluster: each free shard's rounds on their own (a shard is one slot), awaited at most
   * stuckShardMs. Why not one pipeline for all the shards, as on one Redis: it would wait for the slowest
   * master, so a master that stops answering would hold up every schedule until its replica is promoted.
   */
  async function clusterTick(now: number, startedAt: number, result: DispatchResult): Promise<void> {
    let returned = false;
    const work: Promise<void>[] = [];
    for (const shard of shardOrder()) {
      if (busy.has(shard)) continue;
      const own = emptyResult();
      const done = rounds([shard], now, startedAt, own)
        .then(
          () => addInto(returned ? carried : result, own),
          (err: unknown) => {
            addInto(returned ? carried : result, own);
            // Before the tick returns, its caller reports the failure; after, no one would.
            if (!returned) throw err;
            log.error({ err, shard }, 'schedule shard round failed; will retry');
          },
        )
        .finally(() => busy.delete(shard));
      busy.set(shard, done.catch(() => undefined));
      work.push(done);
    }
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<'stuck'>((resolve) => (timer = setTimeout(() => resolve('stuck'), stuckShardMs)));
    try {
      if ((await Promise.race([Promise.all(work), stuck])) === 'stuck') {
        log.warn({ shards: [...busy.keys()], waitedMs: stuckShardMs }, 'schedule shards slow to answer; the others tick on without them until they do');
      }
    } finally {
      clearTimeout(timer);
      returned = true;
    }
  }

  return {
    /** This dispatcher's id: its lease tokens are `<replica>.<seq>` (the scheduler registry's member, takeover.ts). */
    replica,
    /** One tick: claim rounds until no shard returns a full batch (at most maxRounds). */
    async tick(now = Date.now()): Promise<DispatchResult> {
      const startedAt = Date.now(); // the wall clock at `now`: held runs wait for `at - now` less what the tick took since
      const result = carried;
      carried = emptyResult();
      // One Redis: every shard in one round trip. A cluster: each shard on its own (see clusterTick).
      if (!redis.isCluster) await rounds(shardOrder(), now, startedAt, result);
      else await clusterTick(now, startedAt, result);
      return result;
    },
    /**
     * Resolves once every held occurrence has been added and committed, and every shard's rounds ended
     * (shutdown); then stops lifting what was added ahead (another replica's sweep lifts it).
     */
    idle: async () => {
      await Promise.all(busy.values());
      await lane.idle();
      lifts?.stop();
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;

/** Due entries at or before `now` over all shards (16 ZCOUNTs), and the oldest due score: the lag gauge. */
export async function dueBacklog(redis: RedisClient, prefix: string, now = Date.now()): Promise<{ backlog: number; oldestDue: number | null }> {
  const reads: SlotCommand[] = [];
  for (let s = 0; s < SCHEDULE_SHARDS; s++) {
    const k = shardKeys(prefix, s);
    reads.push(['zcount', k.due, '-inf', now], ['zrange', k.due, '0', '0', 'WITHSCORES']);
  }
  const replies = await pipelineBySlot(redis, reads);
  let backlog = 0;
  let oldestDue: number | null = null;
  for (let i = 0; i < replies.length; i += 2) {
    backlog += Number(replies[i]?.[1] ?? 0);
    const first = replies[i + 1]?.[1] as string[] | undefined;
    if (first?.[1] !== undefined) oldestDue = Math.min(oldestDue ?? Number.POSITIVE_INFINITY, Number(first[1]));
  }
  return { backlog, oldestDue };
}
