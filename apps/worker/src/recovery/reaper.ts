import { defineScript, runScript, type DeadWorker, type Logger, type RedisClient } from '@tickwork/core';
import { Job, type Worker } from 'bullmq';

/** BullMQ's own wording, so a dead letter reads the same whichever check counted the last stall. */
export const STALLED_REASON = 'job stalled more than allowable limit';

/**
 * Counts one stall of a job the way BullMQ's stalled check does (`stc` in the job hash; past
 * maxStalledCount the job gets a deferred failure, `defa`, and fails when next taken), but only while
 * the dead Worker's token still holds the job's lock. KEYS: job hash, its lock. ARGV: token,
 * maxStalledCount, reason. Replies the new count, or 0 when the token no longer holds the lock (the job
 * finished, or something else moved it). Jobs of BullMQ job schedulers are not failed, as in BullMQ.
 */
const COUNT_STALL_LUA = `if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
local stalled = redis.call('HINCRBY', KEYS[1], 'stc', 1)
if stalled > tonumber(ARGV[2]) and not redis.call('HGET', KEYS[1], 'rjk') then
  redis.call('HSET', KEYS[1], 'defa', ARGV[3])
end
return stalled`;
const COUNT_STALL = defineScript(COUNT_STALL_LUA);

export interface ReaperOptions {
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
  const held = await activeLockedBy(opts.redis, worker, d.workerId);
  for (const { id, token } of held) await takeBack(opts, worker, d, id, token);
  await opts.redis.zrem(opts.registryKey, d.member);
}

/**
 * The active jobs of `worker`'s queue whose BullMQ lock a Worker holds (every lock token starts with its
 * Worker's id), optionally only those `keep` accepts. One LRANGE, then the locks 500 at a time (one slot on
 * a cluster: a queue's keys share its tag).
 */
export async function activeLockedBy(
  redis: RedisClient,
  worker: Worker,
  workerId: string,
  keep: (jobId: string) => boolean = () => true,
): Promise<{ id: string; token: string }[]> {
  const active = await redis.lrange(worker.keys.active as string, 0, -1);
  const held: { id: string; token: string }[] = [];
  for (let i = 0; i < active.length; i += 500) {
    const ids = active.slice(i, i + 500);
    const tokens = await redis.mget(ids.map((id) => `${worker.toKey(id)}:lock`));
    ids.forEach((id, k) => {
      const token = tokens[k];
      if (token?.startsWith(`${workerId}:`) && keep(id)) held.push({ id, token });
    });
  }
  return held;
}

async function takeBack(opts: ReaperOptions, worker: Worker, d: DeadWorker, id: string, token: string): Promise<void> {
  const jobKey = worker.toKey(id);
  const reason = `${STALLED_REASON}: its worker stopped mid-run more than WORKER_MAX_STALLED_COUNT (${opts.maxStalledCount}) times`;
  const stalled = Number(await runScript(opts.redis, COUNT_STALL, [jobKey, `${jobKey}:lock`], [token, opts.maxStalledCount, reason]));
  if (stalled === 0) return;
  const job = await Job.fromId(worker, id);
  if (!job) return;
  await job.moveToWait(token);
  opts.log.warn(
    { queue: d.queue, job: job.name, jobId: id, deadWorker: d.workerId, silentMs: d.silentMs, stalledCount: stalled, failsNext: stalled > opts.maxStalledCount },
    'took back a job whose worker stopped beating',
  );
}
