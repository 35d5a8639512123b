import type { DstPolicy, MissedPolicy, ScheduleSpec } from '@tickwork/core';
import { DEFAULT_OVERLAP_POLICY, spreadOffsetMs, type OverlapPolicy } from '@tickwork/core';
import { nextOccurrences, ruleOf, type OccurrenceRule } from '../rules/occurrences.js';
import { DEFAULT_CATCH_UP_WINDOW_MS, DEFAULT_DST, DEFAULT_MAX_CATCH_UP, DEFAULT_MISSED, type SchedulePolicies } from '@tickwork/core';
import type { ScheduleSource, ScheduleView } from './api.js';

/**
 * A schedule definition as stored: one field of its shard's `defs` hash. Memory is the point (a million
 * schedules): short field names, defaults omitted, and two parts on one line break —
 * - the core (JSON, keys in a fixed order): what the schedule *is*. Upserting the same definition again
 *   produces the same core string, so "unchanged" is a string comparison (in Lua too);
 * - the meta (JSON array `[version, createdAt, updatedAt, pausedAt?, reason?]`): what happened to it.
 */
export interface DefCore {
  /** Job name. */
  j: string;
  /** Cron pattern, or `e`: every-interval ms. */
  p?: string;
  e?: number;
  /** IANA zone. */
  z: string;
  /** Payload (validated), omitted when empty. */
  d?: unknown;
  /** Non-default DST gap/fold, missed policy, catch-up window, max catch-up, overlap, slowAfter ms. */
  g?: DstPolicy['gap'];
  f?: DstPolicy['fold'];
  m?: MissedPolicy;
  w?: number;
  x?: number;
  o?: OverlapPolicy;
  s?: number;
  /** Watched by the watchdog (always for catalog schedules). */
  W?: 1;
  /** History cap when not the source's default. */
  h?: number;
  /** 1 for catalog schedules (id = job name). */
  S?: 1;
  /** Catalog schedules in staging speed-up: the interval they really fire on. */
  sp?: number;
  /** The `spread` window in ms (the offset is derived from the id: spreadOffsetMs). */
  r?: number;
}

export interface StoredDef {
  core: DefCore;
  coreJson: string;
  version: number;
  createdAt: number;
  updatedAt: number;
  paused: { reason: string; at: number } | null;
}

/** Catalog schedules keep 500 occurrences, as before the store. */
export const CATALOG_HISTORY_CAP = 500;
/**
 * Runtime schedules keep 5: a million schedules x 500 records (~200 bytes each) would be ~100 GB of Redis.
 * Last success and last failure are kept apart, so health never depends on the cap.
 */
export const RUNTIME_HISTORY_CAP = 5;
export const MAX_HISTORY_CAP = 1000;

const CORE_ORDER: readonly (keyof DefCore)[] = ['j', 'p', 'e', 'z', 'd', 'g', 'f', 'm', 'w', 'x', 'o', 's', 'W', 'h', 'S', 'sp', 'r'];

/** The canonical core string: fixed key order, undefined fields left out. */
export function encodeCore(core: DefCore): string {
  const ordered: Record<string, unknown> = {};
  for (const k of CORE_ORDER) if (core[k] !== undefined) ordered[k] = core[k];
  return JSON.stringify(ordered);
}

export type DefMeta = [number, number, number, number?, string?];

export function encodeDef(coreJson: string, meta: DefMeta): string {
  return `${coreJson}\n${JSON.stringify(meta)}`;
}

export function parseDef(raw: string): StoredDef {
  const nl = raw.indexOf('\n');
  const coreJson = nl < 0 ? raw : raw.slice(0, nl);
  const meta = (nl < 0 ? [1, 0, 0] : JSON.parse(raw.slice(nl + 1))) as DefMeta;
  const [version, createdAt, updatedAt, pausedAt, reason] = meta;
  return {
    core: JSON.parse(coreJson) as DefCore,
    coreJson,
    version,
    createdAt,
    updatedAt,
    paused: pausedAt === undefined || pausedAt === null ? null : { reason: reason ?? '', at: pausedAt },
  };
}

/** The spec the shared rule/policy functions take (policy.ts, occurrences.ts), rebuilt from a core. */
export function specOfCore(core: DefCore): ScheduleSpec {
  const common = {
    tz: core.z,
    dst: { gap: core.g ?? DEFAULT_DST.gap, fold: core.f ?? DEFAULT_DST.fold },
    ...(core.m !== undefined && { missed: core.m }),
    ...(core.w !== undefined && { catchUpWindow: { milliseconds: core.w } }),
    ...(core.x !== undefined && { maxCatchUp: core.x }),
    ...(core.o !== undefined && { overlap: core.o }),
    ...(core.s !== undefined && { slowAfter: { milliseconds: core.s } }),
    ...(core.r !== undefined && { spread: { milliseconds: core.r } }),
  };
  return core.p !== undefined ? { pattern: core.p, ...common } : { every: { milliseconds: core.e ?? 0 }, ...common };
}

/** The rule the schedule fires on (a catalog schedule's staging speed-up included). */
export function ruleOfCore(id: string, core: DefCore): OccurrenceRule {
  if (core.sp !== undefined) return { kind: 'every', everyMs: core.sp, tz: core.z };
  return ruleOf(id, specOfCore(core));
}

/** Policies with defaults filled in; no validation (the core was validated when written). */
export function policiesOfCore(core: DefCore): SchedulePolicies {
  return {
    dst: { gap: core.g ?? DEFAULT_DST.gap, fold: core.f ?? DEFAULT_DST.fold },
    missed: core.m ?? DEFAULT_MISSED,
    catchUpWindowMs: core.w ?? DEFAULT_CATCH_UP_WINDOW_MS,
    maxCatchUp: core.x ?? DEFAULT_MAX_CATCH_UP,
    overlap: core.o ?? DEFAULT_OVERLAP_POLICY,
    slowAfterMs: core.s ?? null,
    spreadMs: core.r ?? null,
  };
}

/** The compact core of validated policies: only what differs from the defaults. */
export function policyFields(p: SchedulePolicies): Partial<DefCore> {
  return {
    ...(p.dst.gap !== DEFAULT_DST.gap && { g: p.dst.gap }),
    ...(p.dst.fold !== DEFAULT_DST.fold && { f: p.dst.fold }),
    ...(p.missed !== DEFAULT_MISSED && { m: p.missed }),
    ...(p.catchUpWindowMs !== DEFAULT_CATCH_UP_WINDOW_MS && { w: p.catchUpWindowMs }),
    ...(p.maxCatchUp !== DEFAULT_MAX_CATCH_UP && { x: p.maxCatchUp }),
    ...(p.overlap !== DEFAULT_OVERLAP_POLICY && { o: p.overlap }),
    ...(p.slowAfterMs !== null && { s: p.slowAfterMs }),
    ...(p.spreadMs !== null && { r: p.spreadMs }),
  };
}

export function sourceOf(core: DefCore): ScheduleSource {
  return core.S === 1 ? 'catalog' : 'runtime';
}

export function historyCapOf(core: DefCore): number {
  return core.h ?? (core.S === 1 ? CATALOG_HISTORY_CAP : RUNTIME_HISTORY_CAP);
}

export function isWatched(core: DefCore): boolean {
  return core.S === 1 || core.W === 1;
}

/**
 * A schedule's next run as a user reads it: its due entry, unless an earlier occurrence of its rule after
 * `now` has been claimed already (added ahead by the scheduler's SCHEDULE_ADD_AHEAD_MS, or held within its
 * look-ahead), and the due entry moved past it.
 */
export function nextRunOf(id: string, def: StoredDef, due: number | null, now: number): number | null {
  if (due === null || due <= now || def.paused) return due;
  const first = nextOccurrences(ruleOfCore(id, def.core), new Date(now), 1)[0]?.at.getTime();
  return first !== undefined && first < due ? first : due;
}

/** `due`: the schedule's due entry (or its in-flight claim's nominal); with `now`, `next` is nextRunOf's. */
export function viewOf(id: string, def: StoredDef, queue: string, due: number | null, now?: number): ScheduleView {
  const { core } = def;
  const next = now === undefined ? due : nextRunOf(id, def, due, now);
  return {
    id,
    source: sourceOf(core),
    job: core.j,
    queue,
    ...(core.p !== undefined && { pattern: core.p }),
    ...(core.e !== undefined && { everyMs: core.e }),
    tz: core.z,
    data: core.d ?? {},
    policies: policiesOfCore(core),
    spreadOffsetMs: core.sp !== undefined ? 0 : spreadOffsetMs(id, core.r),
    watch: isWatched(core),
    historyCap: historyCapOf(core),
    paused: def.paused ? { reason: def.paused.reason, at: new Date(def.paused.at).toISOString() } : null,
    next: next === null ? null : new Date(next).toISOString(),
    version: def.version,
    createdAt: new Date(def.createdAt).toISOString(),
    updatedAt: new Date(def.updatedAt).toISOString(),
  };
}
