import type { RedisClient } from '@tickwork/core';
import type { Catalog } from '@tickwork/core';
import type { QueueSet } from '@tickwork/core';
import { runScript } from '@tickwork/core';
import { occurrenceJobId } from '../keys.js';
import { nextOccurrences, occurrencesBetween } from '../rules/occurrences.js';
import { encodeDef, ruleOfCore, type DefCore, type DefMeta, type StoredDef } from './definition.js';
import { SET_DEF } from './lua.js';
import { setDefKeys, type ScheduleState } from './store-keys.js';

/** The rule's first occurrence strictly after `after` (ms), or null when the pattern has none. */
export function nextAfter(id: string, def: { core: DefCore }, after: number): number | null {
  return nextOccurrences(ruleOfCore(id, def.core), new Date(after), 1)[0]?.at.getTime() ?? null;
}

/** The write primitives the API (store.ts) and catalog reconcile (catalog-source.ts) share. */
export function createWriter(opts: { redis: RedisClient; queues: QueueSet; catalog: Catalog }) {
  const { redis, queues, catalog } = opts;
  const prefix = queues.prefix;

  /**
   * The occurrence already enqueued ahead of a definition that changes or goes: its job is removed if it
   * has not started (BullMQ refuses to remove an active job). Returns the time the new rule's next
   * occurrence must come after, so it cannot reuse the job id of an old job still in the queue (adding it
   * would be a no-op). Runs that start anyway are skipped by the worker (version or existence check).
   */
  async function retirePending(id: string, state: ScheduleState, now: number): Promise<number> {
    const def = state.def;
    if (!def) return now;
    let floor = now;
    const candidates = new Set<number>();
    if (state.due !== null && state.due > now) {
      // Enqueued ahead (look-ahead): the old rule's occurrences after now and before the due entry.
      for (const o of occurrencesBetween(ruleOfCore(id, def.core), new Date(now), new Date(state.due - 1), 100).occurrences) candidates.add(o.at.getTime());
    }
    // A dispatcher holding a claim may add its job after this check: keep clear of that nominal.
    if (state.inflight !== null) floor = Math.max(floor, state.inflight);
    const job = catalog.get(def.core.j);
    for (const nominal of candidates) {
      if (!job) continue;
      const removed = await queues
        .get(job.queue)
        .remove(occurrenceJobId(id, new Date(nominal)))
        .catch(() => 0);
      if (removed === 0 && (await queues.get(job.queue).getJob(occurrenceJobId(id, new Date(nominal))))) floor = Math.max(floor, nominal);
    }
    return floor;
  }

  async function setDef(id: string, expected: string, raw: string, job: string, previousJob: string, due: number | null | '-', persist: boolean): Promise<boolean> {
    const argv = [id, expected, raw, due === null ? '' : String(due), persist ? '1' : '0'];
    return (await runScript(redis, SET_DEF, setDefKeys(prefix, id, job, previousJob), argv)) === 1;
  }


  /**
   * A changed definition: version + 1 (kept paused if it was), the pending occurrence retired, and the due
   * entry set to the new rule's next occurrence. Null when another writer got there first (retry).
   */
  async function replaceDef(id: string, state: ScheduleState & { raw: string; def: StoredDef }, core: DefCore, coreJson: string, now: number): Promise<{ next: number | null } | null> {
    const old = state.def;
    const after = await retirePending(id, state, now);
    const next = nextAfter(id, { core }, after);
    const meta: DefMeta = old.paused ? [old.version + 1, old.createdAt, now, old.paused.at, old.paused.reason] : [old.version + 1, old.createdAt, now];
    return (await setDef(id, state.raw, encodeDef(coreJson, meta), core.j, old.core.j, next, false)) ? { next } : null;
  }

  return { retirePending, setDef, replaceDef };
}
