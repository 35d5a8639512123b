import type { RedisClient } from '@tickwork/core';
import type { Catalog } from '@tickwork/core';
import type { AnyJob } from '@tickwork/core';
import type { Logger } from '@tickwork/core';
import type { QueueSet } from '@tickwork/core';
import { pipelineBySlot, type SlotCommand } from '@tickwork/core';
import { runScript } from '@tickwork/core';
import { legacyScheduleKeys, occurrenceJobId, REMOVED_SCHEDULE_STATE_TTL_MS } from '../keys.js';
import { ruleOf } from '../rules/occurrences.js';
import { policiesOf } from '@tickwork/core';
import { encodeCore, encodeDef, policyFields, type DefCore } from './definition.js';
import { historyKeysOf } from './shard-keys.js';
import { recordRemovalCommand } from './removed.js';
import { DELETE_DEF } from './lua.js';
import { deleteDefKeys, ensureShards, readState } from './store-keys.js';
import { createWriter, nextAfter } from './writer.js';

/** A catalog job's schedule as a store definition (id = job name; `sp`: the staging speed-up in force). */
export function catalogCore(job: AnyJob, speedupMs?: number | null): DefCore {
  const spec = job.schedule;
  if (!spec) throw new Error(`job "${job.name}" has no schedule`);
  const rule = ruleOf(job.name, spec);
  const data = spec.data;
  return {
    j: job.name,
    ...(rule.kind === 'cron' ? { p: rule.pattern } : { e: rule.everyMs }),
    z: spec.tz,
    ...(data !== undefined && Object.keys(data).length > 0 && { d: data }),
    ...policyFields(policiesOf(job.name, spec)),
    S: 1,
    ...(speedupMs !== undefined && speedupMs !== null && { sp: speedupMs }),
  };
}

export type CatalogPutResult = 'created' | 'migrated' | 'changed' | 'unchanged';

/**
 * Writes catalog schedules into the store with upsert semantics (unchanged: nothing touched; changed: as
 * an upsert, new version, pending occurrence retired) and migrates a schedule of the layout before the
 * store: its old cursor seeds the due entry with the first occurrence after it (an upgrade neither repeats
 * nor skips one; after a long gap the dispatcher applies the missed policy to what follows), and its history
 * is moved under the new keys.
 */
export function createCatalogSource(opts: { redis: RedisClient; queues: QueueSet; catalog: Catalog; log: Logger; now?: () => number }) {
  const { redis, queues, log } = opts;
  const prefix = queues.prefix;
  const clock = opts.now ?? Date.now;
  const writer = createWriter(opts);

  /** Moves the old history keys under the new ones; returns the old cursor (null: nothing to migrate). */
  async function migrateLegacy(id: string): Promise<number | null> {
    // The old layout never ran on a cluster (nothing to migrate there, and RENAME cannot cross slots).
    if (redis.isCluster) return null;
    const old = legacyScheduleKeys(prefix, id);
    const cursor = await redis.get(old.cursor);
    const moved = historyKeysOf(prefix, id);
    for (const part of ['history', 'records', 'lastSuccess', 'lastFailure'] as const) {
      // RENAME across hash tags: fine on the single Redis the old layout ran on (it never ran on a cluster).
      await redis.rename(old[part], moved[part]).catch(() => undefined); // absent, or a replica moved it first
    }
    return cursor === null ? null : Number(cursor);
  }

  async function put(job: AnyJob, speedupMs?: number | null): Promise<{ result: CatalogPutResult; next: number | null }> {
    await ensureShards(redis, prefix);
    const core = catalogCore(job, speedupMs);
    const coreJson = encodeCore(core);
    for (let attempt = 0; attempt < 10; attempt++) {
      const state = await readState(redis, prefix, job.name);
      const now = clock();
      if (!state.raw || !state.def) {
        const cursor = await migrateLegacy(job.name);
        const next = nextAfter(job.name, { core }, cursor ?? now);
        if (await writer.setDef(job.name, '', encodeDef(coreJson, [1, now, now]), job.name, job.name, next, true)) {
          if (cursor !== null) await redis.del(legacyScheduleKeys(prefix, job.name).cursor);
          return { result: cursor === null ? 'created' : 'migrated', next };
        }
        continue;
      }
      if (state.def.coreJson === coreJson) return { result: 'unchanged', next: state.due ?? state.inflight };
      const replaced = await writer.replaceDef(job.name, { ...state, raw: state.raw, def: state.def }, core, coreJson, now);
      if (replaced) return { result: 'changed', next: replaced.next };
    }
    throw new Error(`catalog schedule "${job.name}" kept changing under reconcile; it is retried on the next one`);
  }

  /**
   * A catalog schedule no longer in the catalog: its definition and index entries go, its pending
   * occurrence jobs (ids `<schedule>@...`) are removed, its history expires in 30 days.
   */
  async function drop(id: string, queueName: string | undefined): Promise<void> {
    const state = await readState(redis, prefix, id);
    if (state.raw && state.def) await runScript(redis, DELETE_DEF, deleteDefKeys(prefix, id, state.def.core.j), [id, state.raw]);
    const old = legacyScheduleKeys(prefix, id);
    const expire = (key: string): SlotCommand => ['pexpire', key, REMOVED_SCHEDULE_STATE_TTL_MS];
    await pipelineBySlot(redis, [
      ['del', old.cursor],
      ...[...Object.values(historyKeysOf(prefix, id)), old.history, old.records, old.lastSuccess, old.lastFailure].map(expire),
      ...(state.raw ? [recordRemovalCommand(prefix, id, state.raw, clock())] : []),
    ]);
    if (!queueName) return;
    const queue = queues.get(queueName);
    const idPrefix = occurrenceJobId(id, new Date(0)).split('@')[0] + '@';
    for (const job of await queue.getJobs(['delayed', 'wait', 'prioritized'], 0, -1)) {
      if (job.id?.startsWith(idPrefix)) await job.remove().catch(() => undefined);
    }
    log.debug({ schedule: id }, 'catalog schedule dropped from the store');
  }

  return { put, drop };
}
