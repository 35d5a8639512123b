import type { RedisClient } from '@tickwork/core';
import { timelineKeyOf } from '@tickwork/schedules';
import { histogramTotal, percentile } from './buckets.js';
import { fieldIndex, MEMORY_LAYOUT, QUEUE_FIELDS, QUEUE_LAYOUT, ringOf, SCHEDULE_FIELDS, SCHEDULE_LAYOUT, type TimelineLayout } from './layout.js';
import { memoryTimelineKey } from './memory.js';
import { readRing } from './store.js';
import { queueTimelineKey } from './writer.js';

/** The spans the charts show: the last hour and day per minute (a day in 5-minute steps), 30 days per hour. */
export const TIMELINE_RANGES = {
  '1h': { ring: 'minute', spanMs: 3_600_000, group: 1 },
  '24h': { ring: 'minute', spanMs: 86_400_000, group: 5 },
  '30d': { ring: 'hour', spanMs: 30 * 86_400_000, group: 1 },
} as const;
export type TimelineRange = keyof typeof TIMELINE_RANGES;

export function isTimelineRange(value: unknown): value is TimelineRange {
  return typeof value === 'string' && Object.hasOwn(TIMELINE_RANGES, value);
}

/** The p50, p95 and p99 of a histogram, in ms (null: nothing counted). */
export interface Percentiles {
  count: number;
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

export function percentilesOf(values: ArrayLike<number>, from: number): Percentiles {
  return { count: histogramTotal(values, from), p50: percentile(values, 0.5, from), p95: percentile(values, 0.95, from), p99: percentile(values, 0.99, from) };
}

/** One step of a chart: its start, its counters summed over the step (by field index), whether any slot of it was written. */
interface Step {
  at: number;
  values: number[];
  written: boolean;
}

/** The steps of `range` ending now, oldest first: slots read from the range's ring, grouped (summed, or for a `max` layout the largest). */
async function readSteps(redis: RedisClient, key: string, layout: TimelineLayout, range: TimelineRange, now: number, fields?: readonly number[]): Promise<{ stepMs: number; steps: Step[] }> {
  const r = TIMELINE_RANGES[range];
  const ring = ringOf(layout, r.ring);
  const stepMs = ring.slotMs * r.group;
  // Whole steps, the last one holding now.
  const lastStep = Math.floor(now / stepMs);
  const firstStep = lastStep - Math.round(r.spanMs / stepMs) + 1;
  const slots = await readRing(redis, key, layout, ring, firstStep * stepMs, now, fields);
  const steps: Step[] = [];
  for (let s = firstStep; s <= lastStep; s++) steps.push({ at: s * stepMs, values: new Array<number>(layout.width).fill(0), written: false });
  for (const slot of slots) {
    const step = steps[Math.floor(slot.at / stepMs) - firstStep];
    if (!step || !slot.values) continue;
    step.written = true;
    for (let f = 1; f < layout.width; f++) {
      const v = slot.values[f] ?? 0;
      step.values[f] = layout.op === 'max' ? Math.max(step.values[f] ?? 0, v) : (step.values[f] ?? 0) + v;
    }
  }
  return { stepMs, steps };
}

export interface QueuePoint {
  at: string;
  completed: number;
  failed: number;
  retried: number;
  deadLettered: number;
  /** Only when read with histograms. */
  wait?: Percentiles;
  run?: Percentiles;
}

export interface QueueTimelineView {
  queue: string;
  range: TimelineRange;
  stepMs: number;
  points: QueuePoint[];
  totals: { completed: number; failed: number; retried: number; deadLettered: number };
  /** Over the whole range (histograms merged): only when read with histograms. */
  wait?: Percentiles;
  run?: Percentiles;
  /** Whether anything was written in the range. */
  written: boolean;
}

const QF = QUEUE_FIELDS;

/** Sums `steps`' values into one row. */
function merged(width: number, steps: readonly Step[]): number[] {
  const all = new Array<number>(width).fill(0);
  for (const s of steps) for (let f = 1; f < width; f++) all[f] = (all[f] ?? 0) + (s.values[f] ?? 0);
  return all;
}

/**
 * A queue's counts per step over `range` (and with `histograms`, its wait and run percentiles per step and
 * over the range). Without histograms only the four counters are read: the overview's few short ranges.
 */
export async function readQueueTimeline(redis: RedisClient, prefix: string, queue: string, range: TimelineRange, opts: { now?: number; histograms?: boolean } = {}): Promise<QueueTimelineView> {
  const histograms = opts.histograms ?? false;
  const fields = histograms ? undefined : [QF.completed, QF.failed, QF.retried, QF.deadLettered];
  const { stepMs, steps } = await readSteps(redis, queueTimelineKey(redis, prefix, queue), QUEUE_LAYOUT, range, opts.now ?? Date.now(), fields);
  const points = steps.map((s): QueuePoint => ({
    at: new Date(s.at).toISOString(),
    completed: s.values[QF.completed] ?? 0,
    failed: s.values[QF.failed] ?? 0,
    retried: s.values[QF.retried] ?? 0,
    deadLettered: s.values[QF.deadLettered] ?? 0,
    ...(histograms && { wait: percentilesOf(s.values, QF.wait), run: percentilesOf(s.values, QF.run) }),
  }));
  const all = merged(QUEUE_LAYOUT.width, steps);
  return {
    queue,
    range,
    stepMs,
    points,
    totals: { completed: all[QF.completed] ?? 0, failed: all[QF.failed] ?? 0, retried: all[QF.retried] ?? 0, deadLettered: all[QF.deadLettered] ?? 0 },
    ...(histograms && { wait: percentilesOf(all, QF.wait), run: percentilesOf(all, QF.run) }),
    written: steps.some((s) => s.written),
  };
}

const SF = SCHEDULE_FIELDS;

export interface ScheduleOutcomes {
  completed: number;
  failed: number;
  retried: number;
  missed: number;
  skipped: number;
  cancelled: number;
}

export interface SchedulePoint extends ScheduleOutcomes {
  at: string;
  lag: Percentiles;
  run: Percentiles;
}

export interface ScheduleTimelineView {
  schedule: string;
  range: TimelineRange;
  stepMs: number;
  points: SchedulePoint[];
  totals: ScheduleOutcomes;
  lag: Percentiles;
  run: Percentiles;
  written: boolean;
}

const outcomesOf = (v: readonly number[]): ScheduleOutcomes => ({
  completed: v[SF.completed] ?? 0,
  failed: v[SF.failed] ?? 0,
  retried: v[SF.retried] ?? 0,
  missed: v[SF.missed] ?? 0,
  skipped: v[SF.skipped] ?? 0,
  cancelled: v[SF.cancelled] ?? 0,
});

/** A catalog schedule's outcomes, fire lag and run time per hour over `range` ('24h' or '30d': it keeps hours only; '1h' reads as '24h'). */
export async function readScheduleTimeline(redis: RedisClient, prefix: string, schedule: string, range: TimelineRange, opts: { now?: number } = {}): Promise<ScheduleTimelineView> {
  const hourly: TimelineRange = range === '30d' ? '30d' : '24h';
  const { stepMs, steps } = await readHourSteps(redis, timelineKeyOf(prefix, schedule), opts.now ?? Date.now(), hourly === '30d' ? 720 : 24);
  const all = merged(SCHEDULE_LAYOUT.width, steps);
  return {
    schedule,
    range: hourly,
    stepMs,
    points: steps.map((s) => ({ at: new Date(s.at).toISOString(), ...outcomesOf(s.values), lag: percentilesOf(s.values, SF.lag), run: percentilesOf(s.values, SF.run) })),
    totals: outcomesOf(all),
    lag: percentilesOf(all, SF.lag),
    run: percentilesOf(all, SF.run),
    written: steps.some((s) => s.written),
  };
}

/** The last `hours` hour slots of a schedule's timeline. */
async function readHourSteps(redis: RedisClient, key: string, now: number, hours: number): Promise<{ stepMs: number; steps: Step[] }> {
  const ring = ringOf(SCHEDULE_LAYOUT, 'hour');
  const last = Math.floor(now / ring.slotMs);
  const slots = await readRing(redis, key, SCHEDULE_LAYOUT, ring, (last - hours + 1) * ring.slotMs, now);
  return {
    stepMs: ring.slotMs,
    steps: slots.map((s) => ({ at: s.at, values: s.values ?? new Array<number>(SCHEDULE_LAYOUT.width).fill(0), written: s.values !== null })),
  };
}

export interface MemoryPoint {
  at: string;
  /** null: no sample in the step. */
  usedBytes: number | null;
  maxBytes: number | null;
}

export interface MemoryTimelineView {
  range: TimelineRange;
  stepMs: number;
  points: MemoryPoint[];
  written: boolean;
}

/** Redis memory over `range`: the largest sample per step (KiB precision). */
export async function readMemoryTimeline(redis: RedisClient, prefix: string, range: TimelineRange, opts: { now?: number } = {}): Promise<MemoryTimelineView> {
  const { stepMs, steps } = await readSteps(redis, memoryTimelineKey(prefix), MEMORY_LAYOUT, range, opts.now ?? Date.now());
  const used = fieldIndex(MEMORY_LAYOUT, 'usedKiB');
  const max = fieldIndex(MEMORY_LAYOUT, 'maxKiB');
  return {
    range,
    stepMs,
    points: steps.map((s) => ({
      at: new Date(s.at).toISOString(),
      usedBytes: s.written ? (s.values[used] ?? 0) * 1024 : null,
      maxBytes: s.written ? (s.values[max] ?? 0) * 1024 : null,
    })),
    written: steps.some((s) => s.written),
  };
}
