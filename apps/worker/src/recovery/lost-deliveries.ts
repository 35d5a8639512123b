import type { Logger, RedisClient } from '@tickwork/core';
import { Job, type Worker } from 'bullmq';
import type { StallBook } from '@tickwork/bullmq-engine';

export interface LostDeliveryOptions {
  /** Recovery's own connection (recovery.ts), for the scans and the takeback. */
  redis: RedisClient;
  worker: Worker;
  queue: string;
  /** The engine's reader of BullMQ's lock tokens (StallBook.activeLockedBy). */
  activeLockedBy: StallBook['activeLockedBy'];
  /** The Worker's connection: its trouble is what arms the check. */
  connection: RedisClient;
  /** Whether this process is running the job (running-jobs.ts). */
  isRunning: (jobId: string) => boolean;
  /** How often the check looks while armed (the heartbeat). */
  everyMs: number;
  /** How long after the last trouble it keeps looking: the lock duration (past it, BullMQ's stalled check finds the job). */
  windowMs: number;
  log: Logger;
}

export interface LostDeliveryCheck {
  /** True while armed: this Worker's connection had trouble within the last lock duration. */
  armed(): boolean;
  stop(): void;
}

/**
 * Jobs delivered to this Worker whose delivery it never received. When the connection drops while BullMQ's
 * moveToActive (or an acknowledgement that fetches the next job) is in flight, Redis may have run it (on a
 * Redis Cluster, the master that ran it may have replicated it just before it died) while the reply is lost:
 * the job sits in `active` under a lock with this Worker's token, and nobody runs it. The process still
 * beats, so the reaper leaves it alone; BullMQ's stalled check takes it back only once the lock has expired
 * and a check has come round (30 to 60 s with the defaults): in the cluster chaos test, without this check,
 * the killed master's queue waited about 50 s for one such job in a few runs out of ten.
 *
 * So trouble on the Worker's connection (an error, a close, a cluster node's error or removal) arms a check:
 * every beat for a lock duration after the last trouble, it reads the queue's active jobs and their locks.
 * A job whose lock carries this Worker's token and which this process is not running, seen so in two checks
 * in a row with the same token, is moved back to wait with BullMQ's own `moveToWait(token)` (fenced by that
 * token), and no stall is counted: the job never ran. Two sightings a beat apart leave alone a job just
 * received, or one whose acknowledgement is on its way (the acknowledgement deletes the lock). An
 * acknowledgement stuck longer than a beat may see its job run again; the ledger then answers the run from
 * its record, or fences a run still claimed (exactly-once does not rest on this check). Nothing is read while
 * unarmed, so a worker that never sees trouble pays nothing.
 */
export function watchLostDeliveries(opts: LostDeliveryOptions): LostDeliveryCheck {
  const { worker } = opts;
  let armedUntil = 0;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  /** `jobId token` pairs seen orphaned by the last check. */
  let seen = new Set<string>();

  const schedule = () => {
    if (!timer && !stopped) timer = setTimeout(() => void check(), opts.everyMs).unref();
  };
  const arm = () => {
    armedUntil = Date.now() + opts.windowMs;
    schedule();
  };

  async function check(): Promise<void> {
    timer = undefined;
    try {
      const next = new Set<string>();
      // Locked with this Worker's token, and not running here.
      const orphaned = await opts.activeLockedBy(opts.redis, worker, worker.id, (id) => !opts.isRunning(id));
      for (const { id, token } of orphaned) {
        const key = `${id} ${token}`;
        if (!seen.has(key)) next.add(key);
        else
          await takeBack(opts, id, token).catch((err: Error) =>
            // Its lock changed meanwhile (it finished, or BullMQ's stall check moved it): nothing to take back.
            opts.log.warn({ err: { message: err.message }, queue: opts.queue, jobId: id }, 'could not take back a job whose delivery was lost; BullMQ\'s stall check will'),
          );
      }
      seen = next;
    } catch (err) {
      // Redis may still be failing over: the next check tries again.
      opts.log.debug({ err: { message: (err as Error).message }, queue: opts.queue }, 'lost-delivery check failed; trying again');
      armedUntil = Math.max(armedUntil, Date.now() + opts.everyMs);
    }
    if (Date.now() < armedUntil || seen.size > 0) schedule();
  }

  const events = ['error', 'close', 'node error', '-node'] as const;
  for (const e of events) opts.connection.on(e, arm);
  return {
    armed: () => Date.now() < armedUntil,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      for (const e of events) opts.connection.off(e, arm);
    },
  };
}

async function takeBack(opts: LostDeliveryOptions, id: string, token: string): Promise<void> {
  const job = await Job.fromId(opts.worker, id);
  if (!job) return;
  await job.moveToWait(token);
  opts.log.warn({ queue: opts.queue, job: job.name, jobId: id }, 'took back a job delivered to this worker while its connection failed (the reply was lost); it waits for a worker again');
}
