import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../redis/connection.js';
import { TickworkError } from '../errors.js';
import type { Logger } from '../logger.js';
import { beatRegistry, freshReply, leaveRegistry, memberSilence } from './heartbeat.js';

/**
 * The worker registry: which worker processes are alive, at a cost per process, not per running job.
 *
 * One sorted set, `<prefix>:meta:workers`, scored by the Redis server time (ms) of each member's last beat:
 * - `p:<tag>`: a worker process. Its tag starts the ledger owner token of every run it claims
 *   (`<tag>.<random>`, ledger.ts newOwner), so a delivery that finds a run held can ask whether the holder
 *   is alive (isDead) instead of waiting out the lease;
 * - `w:<BullMQ worker id>:<queue>`: one BullMQ Worker. Its id prefixes every lock token it writes
 *   (`<id>:<n>`), so a reaper can find the jobs a dead Worker held (apps/worker recovery/reaper.ts);
 * - `h:<tag>`: the process `p:<tag>` holds an occurrence added ahead of its time until its time (the
 *   worker's onTime stage), so the scheduler may add occurrences ahead (schedules/head-start.ts).
 *
 * Every process beats all its members in one script call every `heartbeatMs` (heartbeat.ts); the same call
 * returns the members dead by the registry's rule (silent for `deadAfterMs`, counted from no earlier than
 * the registry's return from an outage; usually none) and drops members silent for `forgetAfterMs`. A
 * process judges from its first beat on. Everything is one key, so every script reads one slot (Redis
 * Cluster).
 */

export function workersKey(prefix: string): string {
  return `${prefix}:meta:workers`;
}

/** The members naming a worker process and saying that it holds early occurrences (see above). */
export const PROCESS_MEMBER = 'p:';
export const HOLDS_EARLY_MEMBER = 'h:';
/** The member saying that the process runs occurrences delivered in batches (occurrence-batch.ts). */
export const CARRIES_BATCHES_MEMBER = 'b:';

/** A short random tag naming this process in owner tokens: 8 characters, never `.` nor `|`. */
export function newProcessTag(): string {
  return randomBytes(6).toString('base64url');
}

/** Answers whether the owner of a ledger lease is dead (see run-exactly-once.ts). */
export interface OwnerLiveness {
  /** This process's tag: the prefix of the owner tokens it claims runs with. */
  readonly tag: string;
  /** True only when `owner` carries a process tag whose process is known to have stopped beating. */
  isDead(owner: string): Promise<boolean>;
  /**
   * 0 when isDead; else how long until `owner`'s process counts as dead if it stays silent (at most the
   * dead-after time); undefined when the registry cannot tell (no tag, this process's own, not registered).
   */
  deadInMs(owner: string): Promise<number | undefined>;
}

/** A BullMQ Worker whose process stopped beating. */
export interface DeadWorker {
  member: string;
  workerId: string;
  queue: string;
  silentMs: number;
}

export interface WorkerRegistryOptions {
  prefix: string;
  heartbeatMs: number;
  /** Silence after which a member counts as dead. */
  deadAfterMs: number;
  /** Silence after which a member is dropped; no shorter than the ledger lease (see stop). */
  forgetAfterMs: number;
  log: Logger;
  /** The process's outage log: while Redis is known to be down, a failed beat is its to report, not ours. */
  outage?: { readonly down: boolean } | undefined;
  /** The process holds occurrences added ahead of their time until their time (registers `h:<tag>`). */
  holdsEarlyOccurrences?: boolean;
  /** The process runs occurrences delivered in batches (registers `b:<tag>`). */
  carriesBatches?: boolean;
}

export class WorkerRegistry implements OwnerLiveness {
  readonly tag = newProcessTag();
  readonly key: string;
  /** Script calls so far, for the bench: beats (one per heartbeat) and liveness checks (one per held claim). */
  readonly sent = { beats: 0, checks: 0 };
  private readonly members: string[];
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** The beat under way, if any: a clean stop waits for it, or its reply would put back the members it removes. */
  private beating: Promise<void> | undefined;
  private onDead: ((dead: DeadWorker[]) => void) | undefined;
  /** performance.now() when the last successful beat was sent; Date.now() when the first of its unbroken run was (aliveThroughout). */
  private lastBeatSent: number | undefined;
  private unbrokenSince = Number.POSITIVE_INFINITY;
  private failing = false;

  constructor(private readonly redis: RedisClient, private readonly opts: WorkerRegistryOptions) {
    if (opts.deadAfterMs < 3 * opts.heartbeatMs) {
      throw new TickworkError(`dead-after ${opts.deadAfterMs} ms must be at least 3 heartbeats (${3 * opts.heartbeatMs} ms): a late beat must not look like a death`);
    }
    this.key = workersKey(opts.prefix);
    this.members = [PROCESS_MEMBER + this.tag, ...(opts.holdsEarlyOccurrences ? [HOLDS_EARLY_MEMBER + this.tag] : []), ...(opts.carriesBatches ? [CARRIES_BATCHES_MEMBER + this.tag] : [])];
  }

  /** Registers a BullMQ Worker (before start, or at any time: the next beat carries it). */
  track(workerId: string, queue: string): void {
    this.members.push(`w:${workerId}:${queue}`);
  }

  /** Beats now, then every heartbeat; `onDead` gets the dead Workers each beat finds (from the first beat on). */
  start(onDead?: (dead: DeadWorker[]) => void): Promise<void> {
    this.onDead = onDead;
    return (this.beating = this.tick());
  }

  /**
   * Stops beating. `deregister`: remove this process's members (a clean stop, nothing left to take over);
   * otherwise they fall silent and, once dead, any job still locked by its Workers is taken over.
   */
  async stop(deregister: boolean): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.beating;
    if (deregister) await leaveRegistry(this.redis, this.key, this.members).catch(() => undefined);
  }

  /**
   * Whether every other process has certainly counted this one alive at every moment since `sinceMs`
   * (Date.now()), with a beat to spare: its beats since then came without a gap as long as the dead-after
   * time less a heartbeat, and its last one is younger than that. A beat's score is Redis's clock when it
   * ran, no earlier than when it was sent, and the registry judges no member dead before its score is the
   * dead-after time old (heartbeat.ts), so no reaper nor takeover can have acted on this one meanwhile. A
   * process frozen meanwhile beats again when it wakes, so the gap, not only the last beat, is what says
   * whether it may have been judged dead.
   */
  aliveThroughout(sinceMs: number): boolean {
    return this.lastBeatSent !== undefined && performance.now() - this.lastBeatSent < this.surelyAliveMs() && this.unbrokenSince <= sinceMs;
  }

  /**
   * How long after a beat was sent every other process surely still counts this one alive: the dead-after
   * time less a heartbeat (a beat to spare). A longer gap between beats may have been judged death.
   */
  private surelyAliveMs(): number {
    return this.opts.deadAfterMs - this.opts.heartbeatMs;
  }

  async isDead(owner: string): Promise<boolean> {
    return (await this.deadInMs(owner)) === 0;
  }

  async deadInMs(owner: string): Promise<number | undefined> {
    const tag = ownerTagOf(owner);
    if (!tag || tag === this.tag) return undefined;
    this.sent.checks++;
    const silentMs = await memberSilence(this.redis, this.key, PROCESS_MEMBER + tag, this.opts.deadAfterMs);
    // Not registered (-1): never was, or forgotten after its leases ran out; the lease decides then.
    return silentMs < 0 ? undefined : Math.max(0, this.opts.deadAfterMs - silentMs);
  }

  private async tick(): Promise<void> {
    try {
      const dead = await this.beat();
      if (this.failing) this.opts.log.info('worker heartbeat restored');
      this.failing = false;
      if (dead.length > 0 && this.onDead && freshReply(this.lastBeatSent ?? 0, this.opts.deadAfterMs)) this.onDead(dead);
    } catch (err) {
      // Once per failing streak: during a Redis outage the connection's own log says the rest.
      if (!this.failing && !this.opts.outage?.down) this.opts.log.warn({ err: { message: (err as Error).message } }, 'worker heartbeat failed; retrying');
      this.failing = true;
    } finally {
      if (!this.stopped) {
        this.timer = setTimeout(() => void (this.beating = this.tick()), this.opts.heartbeatMs);
        this.timer.unref();
      }
    }
  }

  private async beat(): Promise<DeadWorker[]> {
    this.sent.beats++;
    const sentAt = performance.now();
    const sentWall = Date.now();
    const { silent } = await beatRegistry(this.redis, this.key, this.members, this.opts);
    if (this.lastBeatSent === undefined || sentAt - this.lastBeatSent >= this.surelyAliveMs()) this.unbrokenSince = sentWall;
    this.lastBeatSent = sentAt;
    const dead: DeadWorker[] = [];
    for (const { member, silentMs } of silent) {
      // Dead processes (p:) need nothing done: their runs are taken over when claimed again (isDead).
      const m = /^w:([^:]+):(.+)$/.exec(member);
      if (m) dead.push({ member, workerId: m[1] as string, queue: m[2] as string, silentMs });
    }
    return dead;
  }
}

/** The process tag an owner token carries, if it was made with one (newOwner). */
export function ownerTagOf(owner: string): string | undefined {
  const dot = owner.indexOf('.');
  return dot > 0 ? owner.slice(0, dot) : undefined;
}
