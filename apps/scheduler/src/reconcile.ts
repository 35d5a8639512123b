import {
  describeSchedule,
  effectiveRule,
  knownQueues,
  nextOccurrences,
  occurrenceJobId,
  policiesOf,
  registerQueues,
  REMOVED_SCHEDULE_STATE_TTL_MS,
  scheduleKeys,
  scheduleRegistryKey,
  type Catalog,
  type Logger,
  type QueueSet,
} from '@tickwork/runtime';
import type { Redis } from 'ioredis';

export interface ScheduleRegistration {
  queue: string;
  spec: string;
  tz: string;
  policies: ReturnType<typeof policiesOf>;
  speedupMs: number | null;
}

export interface ReconcileResult {
  registered: { id: string; queue: string; next: Date | undefined }[];
  removed: { id: string; queue: string }[];
}

/**
 * Makes the schedule registry in Redis (one hash field per schedule, id = job name) equal the catalog and
 * removes what no job claims any more, so a deploy never leaves a ghost schedule firing: its registration,
 * its pending occurrence jobs, and any BullMQ job scheduler left from before tickwork computed occurrences
 * itself. Safe with any number of replicas: HSET/HDEL are idempotent and only the replica whose HDEL
 * removed the field reports (and logs) the removal.
 */
export async function reconcileSchedules(opts: {
  catalog: Catalog;
  queues: QueueSet;
  redis: Redis;
  log: Logger;
  speedupMs?: number | undefined;
}): Promise<ReconcileResult> {
  const { catalog, queues, redis, log } = opts;
  const prefix = queues.prefix;
  await registerQueues(redis, prefix, catalog.queues);
  const registry = scheduleRegistryKey(prefix);
  const result: ReconcileResult = { registered: [], removed: [] };
  const before = await redis.hgetall(registry);

  for (const job of catalog.scheduled()) {
    const spec = job.schedule;
    if (!spec) continue;
    const registration: ScheduleRegistration = {
      queue: job.queue,
      spec: describeSchedule(job),
      tz: spec.tz,
      policies: policiesOf(job.name, spec),
      speedupMs: opts.speedupMs ?? null,
    };
    const serialized = JSON.stringify(registration);
    if ((await redis.hset(registry, job.name, serialized)) === 1) {
      // Registered (again): its state is kept for good, even if it was removed once and set to expire.
      const state = redis.pipeline();
      for (const key of Object.values(scheduleKeys(prefix, job.name))) state.persist(key);
      await state.exec();
    }
    const next = nextOccurrences(effectiveRule(job, opts.speedupMs), new Date(), 1)[0]?.at;
    result.registered.push({ id: job.name, queue: job.queue, next });
    // Every reconcile re-registers every schedule: only a change is news; the steady state is debug.
    const changed = before[job.name] !== serialized;
    log[changed ? 'info' : 'debug']({ schedule: job.name, queue: job.queue, spec: registration.spec, next: next?.toISOString() }, changed ? 'schedule registered' : 'schedule unchanged');
  }

  const wanted = new Set(catalog.scheduled().map((j) => j.name));
  for (const [id, raw] of Object.entries(await redis.hgetall(registry))) {
    if (wanted.has(id)) continue;
    if ((await redis.hdel(registry, id)) === 0) continue; // another replica removed it
    const queueName = (JSON.parse(raw) as Partial<ScheduleRegistration>).queue;
    if (queueName) await removePendingOccurrences(queues, queueName, id);
    const state = redis.pipeline();
    for (const key of Object.values(scheduleKeys(prefix, id))) state.pexpire(key, REMOVED_SCHEDULE_STATE_TTL_MS);
    await state.exec();
    result.removed.push({ id, queue: queueName ?? '?' });
    log.warn({ schedule: id, queue: queueName }, 'removed schedule no longer in the catalog');
  }

  for (const queueName of await knownQueues(redis, prefix)) {
    const queue = queues.get(queueName);
    for (const scheduler of await queue.getJobSchedulers(0, -1)) {
      const id = scheduler.id ?? scheduler.key;
      if (await queue.removeJobScheduler(id)) {
        result.removed.push({ id, queue: queueName });
        log.warn({ schedule: id, queue: queueName }, 'removed a BullMQ job scheduler (tickwork schedules occurrences itself)');
      }
    }
  }
  return result;
}

/** Occurrence jobs not yet started of a removed schedule (ids `<schedule>@...`, see occurrenceJobId). */
async function removePendingOccurrences(queues: QueueSet, queueName: string, schedule: string): Promise<void> {
  const queue = queues.get(queueName);
  const idPrefix = occurrenceJobId(schedule, new Date(0)).split('@')[0] + '@';
  for (const job of await queue.getJobs(['delayed', 'wait', 'prioritized'], 0, -1)) {
    if (job.id?.startsWith(idPrefix)) await job.remove().catch(() => undefined);
  }
}
