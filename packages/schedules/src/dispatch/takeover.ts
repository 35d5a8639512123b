import { beatRegistry, defineScript, freshReply, leaveRegistry, REDIS_NOW_LUA, REGISTRY_SILENCE_LUA, runScript, runScriptMany, TickworkError, type SilentMember } from '@tickwork/core';
import type { Logger, RedisClient } from '@tickwork/core';
import { schedulerTakeovers } from '../health/health-metrics.js';
import { RELEASE_CLAIMS } from '../store/lua.js';
import { SCHEDULE_SHARDS, shardKeys } from '../store/shard-keys.js';

/**
 * The scheduler registry: which scheduler processes are alive, so that the claims of one killed mid-way are
 * taken over within seconds rather than when their lease (SCHEDULE_LEASE_MS) runs out.
 *
 * One sorted set, `<prefix>:meta:schedulers` (apart from the worker registry, whose members the head start
 * reads), scored by the Redis server time of each member's last beat (heartbeat.ts in @tickwork/core). Its
 * members are dispatcher replica ids: every lease token a dispatcher claims with starts with its id
 * (`<replica>.<seq>`). Each scheduler beats every SCHEDULER_HEARTBEAT_MS; the beat answers the members
 * dead by the registry's rule (silent for SCHEDULER_DEAD_AFTER_MS, counted from no earlier than the
 * registry's return from an outage: heartbeat.ts), from a scheduler's first beat on. For each, a live
 * scheduler that found it removes the member, only while it is still dead by that rule (so exactly one does
 * it, and a process that beat again meanwhile is left alone), then releases its claims on every shard
 * (RELEASE_CLAIMS: one script per shard, pipelined, each on its shard's keys only): they expire at once and
 * the next claim round of any live scheduler takes them over, with the planner's takeover rule
 * (catch-up.ts `supersede`).
 *
 * Safety does not rest on the judgement: a scheduler judged dead that was only frozen (SIGSTOP, a long GC)
 * finds, when it resumes, its claims taken by others; its late commit is refused where another holds the
 * claim, and what it adds is a no-op (deterministic job ids) or suppressed by the idempotency ledger. A
 * clean stop removes its member. Nothing here is on the claim or commit path: one script call per beat, and
 * the release only when a scheduler died.
 */

export const DEFAULT_SCHEDULER_HEARTBEAT_MS = 1000;
export const DEFAULT_SCHEDULER_DEAD_AFTER_MS = 3000;

export function schedulersKey(prefix: string): string {
  return `${prefix}:meta:schedulers`;
}

/** KEYS[1] registry, ARGV[1] member, ARGV[2] dead-after ms: removes the member only while it is still dead by the registry's rule. */
const ADOPT = defineScript(`${REGISTRY_SILENCE_LUA}${REDIS_NOW_LUA}
if registry_silence(KEYS[1], ARGV[1], now, tonumber(ARGV[2])) < tonumber(ARGV[2]) then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
return 1`);

/** Expires every claim the `replicas` hold, on every shard; returns how many. */
export async function releaseClaims(redis: RedisClient, prefix: string, replicas: readonly string[]): Promise<number> {
  const calls = Array.from({ length: SCHEDULE_SHARDS }, (_, shard) => {
    const k = shardKeys(prefix, shard);
    return { keys: [k.claimed, k.inflight], argv: [...replicas] };
  });
  return (await runScriptMany(redis, RELEASE_CLAIMS, calls)).reduce<number>((n, r) => n + Number(r), 0);
}

/** A claim a replica holds: its schedule and the nominal time of the occurrence it was claimed from. */
export interface HeldClaim {
  id: string;
  nominal: number;
}

/** The claims `replica` holds now, on every shard (one HGETALL per shard: for tools and tests, not the hot path). */
export async function claimsHeldBy(redis: RedisClient, prefix: string, replica: string): Promise<HeldClaim[]> {
  const held: HeldClaim[] = [];
  for (let s = 0; s < SCHEDULE_SHARDS; s++) {
    for (const [id, value] of Object.entries(await redis.hgetall(shardKeys(prefix, s).inflight))) {
      const m = /^(\d+):([^.]+)\./.exec(value);
      if (m?.[2] === replica) held.push({ id, nominal: Number(m[1]) });
    }
  }
  return held;
}

export interface SchedulerRegistryOptions {
  /** A connection of its own: a beat must not wait behind a large claim round (a late beat looks like a death). */
  redis: RedisClient;
  prefix: string;
  /** The dispatcher's replica id (its lease tokens' prefix). */
  replica: string;
  heartbeatMs: number;
  /** Silence after which a scheduler counts as dead; at least 3 heartbeats. */
  deadAfterMs: number;
  /** The claim lease: a member silent for longer than it plus deadAfterMs is dropped by any beat (its claims expired anyway). */
  leaseMs: number;
  log: Logger;
  /** The process's outage log: while Redis is known to be down, a failed beat is its to report. */
  outage?: { readonly down: boolean } | undefined;
}

export interface SchedulerRegistry {
  readonly key: string;
  /** Beats now, then every heartbeat, taking over dead schedulers' claims as it finds them. */
  start(): Promise<void>;
  /** Stops beating. `deregister`: remove this scheduler's member (a clean stop, after its claims are committed). */
  stop(deregister: boolean): Promise<void>;
}

export function createSchedulerRegistry(opts: SchedulerRegistryOptions): SchedulerRegistry {
  const { redis, replica, log } = opts;
  if (opts.deadAfterMs < 3 * opts.heartbeatMs) {
    throw new TickworkError(`scheduler dead-after ${opts.deadAfterMs} ms must be at least 3 heartbeats (${3 * opts.heartbeatMs} ms): a late beat must not look like a death`);
  }
  const key = schedulersKey(opts.prefix);
  const timing = { deadAfterMs: opts.deadAfterMs, forgetAfterMs: opts.leaseMs + opts.deadAfterMs };
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let failing = false;
  let takingOver: Promise<void> | undefined;
  /** The beat in flight: a clean stop awaits it, or it could write the member back after the stop removed it. */
  let beating: Promise<void> | undefined;

  /** Each dead member: removed while still silent (one live scheduler wins), then its claims released. */
  async function takeOver(dead: readonly SilentMember[]): Promise<void> {
    for (const d of dead) {
      if ((await runScript(redis, ADOPT, [key], [d.member, opts.deadAfterMs])) !== 1) continue; // another took it, or it beat again
      try {
        const claims = await releaseClaims(redis, opts.prefix, [d.member]);
        schedulerTakeovers.inc();
        log.warn({ replica: d.member, silentMs: d.silentMs, claims }, 'a scheduler stopped beating: its claims are released, and the live schedulers take its schedules over');
      } catch (err) {
        log.warn({ err: { message: (err as Error).message }, replica: d.member }, "could not release a dead scheduler's claims; they are taken over when their lease expires");
      }
    }
  }

  function tick(): Promise<void> {
    beating = beat().finally(() => {
      beating = undefined;
      if (!stopped) {
        timer = setTimeout(() => void tick(), opts.heartbeatMs);
        timer.unref();
      }
    });
    return beating;
  }

  async function beat(): Promise<void> {
    try {
      const sentAt = performance.now();
      const { silent } = await beatRegistry(redis, key, [replica], timing);
      if (failing) log.info('scheduler heartbeat restored');
      failing = false;
      const dead = silent.filter((d) => d.member !== replica);
      if (dead.length > 0 && !takingOver && freshReply(sentAt, opts.deadAfterMs)) {
        takingOver = takeOver(dead)
          .catch((err: unknown) => log.warn({ err: { message: (err as Error).message } }, 'could not take over a dead scheduler; retrying on the next beat'))
          .finally(() => (takingOver = undefined));
      }
    } catch (err) {
      // Once per failing streak: during a Redis outage the connection's own log says the rest.
      if (!failing && !opts.outage?.down) log.warn({ err: { message: (err as Error).message } }, 'scheduler heartbeat failed; retrying');
      failing = true;
    }
  }

  return {
    key,
    start: tick,
    async stop(deregister) {
      stopped = true;
      clearTimeout(timer);
      await beating;
      await takingOver;
      if (deregister) await leaveRegistry(redis, key, [replica]).catch(() => undefined);
    },
  };
}
