import { STALLED_REASON, type StallBook } from '@tickwork/bullmq-engine';
import type { DeadWorker, Logger, RedisClient } from '@tickwork/core';
import { Job, type Worker } from 'bullmq';

export interface ReaperOptions {
  /** The engine's stall bookkeeping (BullMQ's `stc` and lock keys). */
  stalls: StallBook;
  redis: RedisClient;
  prefix: string;
  /** The registry's key (its members are removed once reaped). */
  registryKey: string;
  /** This process's BullMQ Worker of `queue`; a dead Worker of a queue this process does not run is left to one that does. */
  workerOf: (queue: string) => Worker | undefined;
  maxStalledCount: number;
  log: Logger;
}

/**
 * Takes back the jobs of BullMQ Workers whose process stopped beating (the rare path): finds the queue's
 * active jobs whose lock token starts with the dead Worker's id, counts a stall on each, and moves each back
 * to wait with BullMQ's own `job.moveToWait(token)` (fenced by that token), where any live worker takes it.
 * Every live process sees the same dead list; a short guard key per dead Worker lets one of them do it.
 * Returns the function the registry calls with each beat's dead Workers; one reaping at a time.
 */
export function createReaper(opts: ReaperOptions): (dead: DeadWorker[]) => void {
  let reaping = false;
  return (dead) => {
    if (reaping) return;
    reaping = true;
    void (async () => {
      for (const d of dead) {
        await reapWorker(opts, d).catch((err: Error) =>
          opts.log.warn({ err: { message: err.message }, deadWorker: d.workerId, queue: d.queue }, 'could not take back a dead worker\'s jobs; retrying on the next beat'),
        );
      }
    })().finally(() => (reaping = false));
  };
}

async function reapWorker(opts: ReaperOptions, d: DeadWorker): Promise<void> {
  const worker = opts.workerOf(d.queue);
  if (!worker) return;
  const guard = await opts.redis.set(`${opts.prefix}:meta:reaping:${d.workerId}`, '1', 'PX', 10_000, 'NX');
  if (guard !== 'OK') return;
  const held = await opts.stalls.activeLockedBy(opts.redis, worker, d.workerId);
  for (const { id, token } of held) await takeBack(opts, worker, d, id, token);
  await opts.redis.zrem(opts.registryKey, d.member);
}


async function takeBack(opts: ReaperOptions, worker: Worker, d: DeadWorker, id: string, token: string): Promise<void> {
  const jobKey = worker.toKey(id);
  const reason = `${STALLED_REASON}: its worker stopped mid-run more than WORKER_MAX_STALLED_COUNT (${opts.maxStalledCount}) times`;
  const stalled = await opts.stalls.countStall(opts.redis, jobKey, token, opts.maxStalledCount, reason, worker.keys.events as string, id);
  if (stalled === 0) return;
  const job = await Job.fromId(worker, id);
  if (!job) return;
  await job.moveToWait(token);
  opts.log.warn(
    { queue: d.queue, job: job.name, jobId: id, deadWorker: d.workerId, silentMs: d.silentMs, stalledCount: stalled, failsNext: stalled > opts.maxStalledCount },
    'took back a job whose worker stopped beating',
  );
}
