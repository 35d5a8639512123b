import { createCatalogSource, describeSchedule, scheduleRegistryKey } from '@tickwork/schedules';
import { knownQueues, policiesOf, registerQueues, type Catalog, type Logger, type QueueSet, type RedisClient } from '@tickwork/core';

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
 * Makes the schedule registry in Redis (one hash field per catalog schedule, id = job name) and the
 * schedule store equal the catalog, and removes what no job claims any more, so a deploy never leaves a
 * ghost schedule firing: its definition, its pending occurrence jobs, and any BullMQ job scheduler left
 * from before tickwork computed occurrences itself. Catalog schedules are written into the store with
 * upsert semantics (unchanged: nothing touched) and migrated from the layout before the store. Safe with
 * any number of replicas: store writes are compare-and-set, and only the replica whose HDEL removed a
 * registration reports (and logs) the removal.
 */
export async function reconcileSchedules(opts: {
  catalog: Catalog;
  queues: QueueSet;
  redis: RedisClient;
  log: Logger;
  speedupMs?: number | undefined;
}): Promise<ReconcileResult> {
  const { catalog, queues, redis, log } = opts;
  const prefix = queues.prefix;
  await registerQueues(redis, prefix, catalog.queues);
  const registry = scheduleRegistryKey(prefix);
  const source = createCatalogSource({ redis, queues, catalog, log });
  const result: ReconcileResult = { registered: [], removed: [] };

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
    await redis.hset(registry, job.name, JSON.stringify(registration));
    const put = await source.put(job, opts.speedupMs);
    const next = put.next === null ? undefined : new Date(put.next);
    result.registered.push({ id: job.name, queue: job.queue, next });
    // Every reconcile re-registers every schedule: only a change is news; the steady state is debug.
    const changed = put.result !== 'unchanged';
    log[changed ? 'info' : 'debug']({ schedule: job.name, queue: job.queue, spec: registration.spec, next: next?.toISOString(), result: put.result }, changed ? 'schedule registered' : 'schedule unchanged');
  }

  const wanted = new Set(catalog.scheduled().map((j) => j.name));
  for (const [id, raw] of Object.entries(await redis.hgetall(registry))) {
    if (wanted.has(id)) continue;
    if ((await redis.hdel(registry, id)) === 0) continue; // another replica removed it
    const queueName = (JSON.parse(raw) as Partial<ScheduleRegistration>).queue;
    await source.drop(id, queueName);
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
