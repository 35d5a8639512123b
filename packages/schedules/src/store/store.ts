import { randomBytes } from 'node:crypto';
import type { RedisClient } from '@tickwork/core';
import type { Catalog } from '@tickwork/core';
import type { AnyJob } from '@tickwork/core';
import { TickworkError } from '@tickwork/core';
import type { Logger } from '@tickwork/core';
import type { QueueSet } from '@tickwork/core';
import { runScript } from '@tickwork/core';
import { manualOccurrenceJobId, REMOVED_SCHEDULE_STATE_TTL_MS } from '../keys.js';
import { manualOccurrenceKey } from '@tickwork/core';
import type { ListPage, ListQuery, ScheduleInput, Schedules, ScheduleView, UpsertResult } from './api.js';
import { encodeDef, parseDef, nextRunOf, viewOf, type StoredDef } from './definition.js';
import { createWriter, nextAfter } from './writer.js';
import { CatalogScheduleError, ScheduleNotFoundError } from '../errors.js';
import { coreFromInput } from './input.js';
import { historyKeysOf } from './shard-keys.js';
import { countSchedules, listSchedules } from './list.js';
import { DELETE_DEF } from './lua.js';
import { addOccurrenceJobs } from '../dispatch/occurrence-jobs.js';
import { resumePlan, writeRecords } from './resume.js';
import { deleteDefKeys, ensureShards, readState, type ScheduleState } from './store-keys.js';
import { readRemoved, recordRemovalCommand } from './removed.js';

export interface ScheduleStoreOptions {
  redis: RedisClient;
  queues: QueueSet;
  catalog: Catalog;
  log?: Logger;
  /** The clock (tests pass their own). */
  now?: () => number;
}

/** Compare-and-set retries before giving up (only concurrent writers of the same schedule cause one). */
const CAS_ATTEMPTS = 10;

export class ScheduleConflictError extends TickworkError {
  override name = 'ScheduleConflictError';
  constructor(readonly scheduleId: string) {
    super(`schedule "${scheduleId}" kept changing under this write (${CAS_ATTEMPTS} attempts); retry it`);
  }
}

/**
 * The schedule store: the only writer of schedule definitions and their due entries (the dispatcher moves
 * due entries through claims; reconcile writes catalog schedules through the same primitives). Every
 * write is a compare-and-set on the stored definition, so concurrent writers and dispatchers never
 * interleave half-way.
 */
export function createSchedules(opts: ScheduleStoreOptions): Schedules {
  const { redis, queues, catalog } = opts;
  const prefix = queues.prefix;
  const clock = opts.now ?? Date.now;

  const queueOf = (def: StoredDef) => catalog.get(def.core.j)?.queue ?? '?';
  const { retirePending, setDef, replaceDef } = createWriter(opts);

  async function mustRead(id: string): Promise<ScheduleState & { raw: string; def: StoredDef }> {
    await ensureShards(redis, prefix);
    const state = await readState(redis, prefix, id);
    if (!state.raw || !state.def) throw new ScheduleNotFoundError(id);
    return state as ScheduleState & { raw: string; def: StoredDef };
  }

  const store: Schedules = {
    async upsert<J extends AnyJob>(id: string, input: ScheduleInput<J>): Promise<UpsertResult> {
      const { job, coreJson, core } = coreFromInput(catalog, id, input as ScheduleInput);
      await ensureShards(redis, prefix);
      for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
        const state = await readState(redis, prefix, id);
        const now = clock();
        if (!state.raw || !state.def) {
          const next = nextAfter(id, { core }, now);
          if (await setDef(id, '', encodeDef(coreJson, [1, now, now]), job.name, job.name, next, true)) return { created: true, changed: true, next: next === null ? null : new Date(next) };
          continue;
        }
        const old = state.def;
        if (old.core.S === 1) throw new CatalogScheduleError(id, 'upsert');
        if (old.coreJson === coreJson) {
          const due = nextRunOf(id, old, state.due ?? state.inflight, now);
          return { created: false, changed: false, next: due === null ? null : new Date(due) };
        }
        const replaced = await replaceDef(id, state as ScheduleState & { raw: string; def: StoredDef }, core, coreJson, now);
        if (replaced) return { created: false, changed: true, next: replaced.next === null ? null : new Date(replaced.next) };
      }
      throw new ScheduleConflictError(id);
    },

    async remove(id: string): Promise<boolean> {
      await ensureShards(redis, prefix);
      for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
        const state = await readState(redis, prefix, id);
        if (!state.raw || !state.def) return false;
        if (state.def.core.S === 1) throw new CatalogScheduleError(id, 'remove');
        if ((await runScript(redis, DELETE_DEF, deleteDefKeys(prefix, id, state.def.core.j), [id, state.raw])) !== 1) continue;
        // The history stays for inspection, then expires (as a removed catalog schedule's does), with a
        // record of the removal and of the definition, so the schedule's page can still say what it was.
        const expire = redis.pipeline();
        for (const key of Object.values(historyKeysOf(prefix, id))) expire.pexpire(key, REMOVED_SCHEDULE_STATE_TTL_MS);
        expire.call(...recordRemovalCommand(prefix, id, state.raw, clock()));
        await expire.exec();
        await retirePending(id, state, clock());
        opts.log?.info({ schedule: id }, 'schedule removed');
        return true;
      }
      throw new ScheduleConflictError(id);
    },

    async get(id: string): Promise<ScheduleView | null> {
      await ensureShards(redis, prefix);
      const state = await readState(redis, prefix, id);
      if (!state.def) return null;
      return viewOf(id, state.def, queueOf(state.def), state.due ?? state.inflight, clock());
    },

    async getRemoved(id: string) {
      if (await store.get(id)) return null;
      return readRemoved(redis, prefix, id, queueOf, clock());
    },

    list: (query?: ListQuery): Promise<ListPage> => listSchedules(redis, prefix, (def) => queueOf(def), query),
    count: (query) => countSchedules(redis, prefix, catalog.scheduled().map((j) => j.name), query),

    async pause(id: string, reason: string): Promise<boolean> {
      for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
        const state = await mustRead(id);
        if (state.def.paused) return false;
        const now = clock();
        const d = state.def;
        const raw = encodeDef(d.coreJson, [d.version, d.createdAt, now, now, String(reason ?? '')]);
        if (await setDef(id, state.raw, raw, d.core.j, d.core.j, '-', false)) {
          opts.log?.info({ schedule: id, reason }, 'schedule paused');
          return true;
        }
      }
      throw new ScheduleConflictError(id);
    },

    async resume(id: string): Promise<boolean> {
      for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
        const state = await mustRead(id);
        const d = state.def;
        if (!d.paused) return false;
        const now = clock();
        const plan = resumePlan(id, d, state.due, now);
        const raw = encodeDef(d.coreJson, [d.version, d.createdAt, now]);
        if (!(await setDef(id, state.raw, raw, d.core.j, d.core.j, nextAfter(id, d, now - 1), false))) continue;
        const resumed: StoredDef = parseDef(raw);
        // Only the writer whose compare-and-set won adds the catch-ups the missed policy asks for.
        await addOccurrenceJobs(queues, catalog, plan.catchUps.map((c) => ({ id, def: resumed, nominal: c.nominal, catchUp: true, intervalMs: c.intervalMs })), now);
        await writeRecords(redis, prefix, id, d, plan.records, now);
        opts.log?.info({ schedule: id, caughtUp: plan.catchUps.length }, 'schedule resumed');
        return true;
      }
      throw new ScheduleConflictError(id);
    },

    async runNow(id: string, runOpts?: { by?: string }): Promise<{ jobId: string; occurrence: string }> {
      const state = await mustRead(id);
      const now = clock();
      const token = `${now.toString(36)}-${randomBytes(4).toString('hex')}`;
      const jobId = manualOccurrenceJobId(id, token);
      const occurrence = manualOccurrenceKey(id, token);
      const unknown = await addOccurrenceJobs(queues, catalog, [{ id, def: state.def, nominal: now, catchUp: false, intervalMs: null, manual: { token, jobId } }], now);
      if (unknown.length > 0) throw new TickworkError(`schedule "${id}" runs job "${state.def.core.j}", which this catalog does not have; deploy the job first`);
      await writeRecords(redis, prefix, id, state.def, [{ id: occurrence, nominal: now, patch: { enqueuedAt: new Date(now).toISOString() }, defaults: { trigger: 'manual', jobId, ...(runOpts?.by && { by: runOpts.by }) } }], now);
      opts.log?.info({ schedule: id, jobId, by: runOpts?.by }, 'manual run of a schedule enqueued');
      return { jobId, occurrence };
    },
  };
  return store;
}
