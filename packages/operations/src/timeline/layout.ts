import { BUCKETS } from './buckets.js';

/**
 * How a timeline sits in Redis: ONE string per queue (per catalog schedule, for Redis memory), a fixed
 * number of bytes whatever the traffic. It holds rings of slots: per-minute slots for 24 hours (1,440,
 * slot = minute mod 1440) and per-hour slots for 30 days (720, slot = hour mod 720). A slot is a row of
 * unsigned 32-bit counters (BITFIELD u32): its first is the stamp of the minute or hour it holds (minutes or
 * hours since the epoch; 0 = never written); a write into a slot whose stamp is older first zeroes it. So an
 * old minute is overwritten by the same minute a day later, and nothing ever grows.
 *
 * The counters are stored field by field (all stamps of a ring, then all of its first counter, ...), so a
 * chart that needs a few fields (the overview's completed and failed) reads a few short ranges.
 */

export interface Ring {
  readonly name: 'minute' | 'hour';
  /** The time one slot covers. */
  readonly slotMs: number;
  readonly slots: number;
  /** Where the ring starts, in u32 counters from the start of the string. */
  readonly base: number;
}

export interface TimelineLayout {
  /** The names of a slot's counters after its stamp (the stamp is field 0). */
  readonly fields: readonly string[];
  /** Counters per slot, the stamp included. */
  readonly width: number;
  readonly rings: readonly Ring[];
  /** u32 counters in all: the string is 4 times this many bytes. */
  readonly size: number;
  /** How slot increments combine: `add` (counts), or `max` (a sampled level, e.g. memory). */
  readonly op: 'add' | 'max';
}

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
/** Per-minute slots: 24 hours. */
export const MINUTE_SLOTS = 1440;
/** Per-hour slots: 30 days. */
export const HOUR_SLOTS = 720;

function layoutOf(fields: readonly string[], rings: readonly Pick<Ring, 'name' | 'slotMs' | 'slots'>[], op: TimelineLayout['op']): TimelineLayout {
  const width = fields.length + 1;
  let base = 0;
  const placed = rings.map((r) => {
    const ring = { ...r, base };
    base += width * r.slots;
    return ring;
  });
  return { fields, width, rings: placed, size: base, op };
}

const histogram = (name: string) => Array.from({ length: BUCKETS }, (_, i) => `${name}${i}`);
const minuteRing = { name: 'minute', slotMs: MINUTE_MS, slots: MINUTE_SLOTS } as const;
const hourRing = { name: 'hour', slotMs: HOUR_MS, slots: HOUR_SLOTS } as const;

/**
 * A queue's: per minute and per hour, handler attempts that completed, failed for good, failed to be retried,
 * jobs dead-lettered, and the histograms of wait (ready to first start) and run time.
 */
export const QUEUE_LAYOUT = layoutOf(['completed', 'failed', 'retried', 'deadLettered', ...histogram('wait'), ...histogram('run')], [minuteRing, hourRing], 'add');

/**
 * A catalog schedule's: per hour, its runs' outcomes (completed, failed for good, failed to be retried,
 * missed, skipped, cancelled) and the histograms of fire lag (nominal time to the first attempt's start)
 * and run time.
 */
export const SCHEDULE_LAYOUT = layoutOf(
  ['completed', 'failed', 'retried', 'missed', 'skipped', 'cancelled', ...histogram('lag'), ...histogram('run')],
  [hourRing],
  'add',
);

/** Redis memory, sampled once a minute: the largest used_memory (KiB) of the minute or hour, and maxmemory (KiB, 0 = none). */
export const MEMORY_LAYOUT = layoutOf(['usedKiB', 'maxKiB'], [minuteRing, hourRing], 'max');

/** The index of `field` in a slot (1-based: 0 is the stamp). */
export function fieldIndex(layout: TimelineLayout, field: string): number {
  const i = layout.fields.indexOf(field);
  if (i < 0) throw new Error(`no timeline field ${field}`);
  return i + 1;
}

/** Bytes of a timeline's string (its Redis value, before Redis's own overhead). */
export function layoutBytes(layout: TimelineLayout): number {
  return layout.size * 4;
}

export function ringOf(layout: TimelineLayout, name: Ring['name']): Ring {
  const ring = layout.rings.find((r) => r.name === name);
  if (!ring) throw new Error(`this timeline keeps no ${name} ring`);
  return ring;
}

/** Where a queue's counts and histograms start in its slot (the writer and the reader share them). */
export const QUEUE_FIELDS = {
  completed: fieldIndex(QUEUE_LAYOUT, 'completed'),
  failed: fieldIndex(QUEUE_LAYOUT, 'failed'),
  retried: fieldIndex(QUEUE_LAYOUT, 'retried'),
  deadLettered: fieldIndex(QUEUE_LAYOUT, 'deadLettered'),
  wait: fieldIndex(QUEUE_LAYOUT, 'wait0'),
  run: fieldIndex(QUEUE_LAYOUT, 'run0'),
};

/** Where a catalog schedule's counts and histograms start in its slot. */
export const SCHEDULE_FIELDS = {
  completed: fieldIndex(SCHEDULE_LAYOUT, 'completed'),
  failed: fieldIndex(SCHEDULE_LAYOUT, 'failed'),
  retried: fieldIndex(SCHEDULE_LAYOUT, 'retried'),
  missed: fieldIndex(SCHEDULE_LAYOUT, 'missed'),
  skipped: fieldIndex(SCHEDULE_LAYOUT, 'skipped'),
  cancelled: fieldIndex(SCHEDULE_LAYOUT, 'cancelled'),
  lag: fieldIndex(SCHEDULE_LAYOUT, 'lag0'),
  run: fieldIndex(SCHEDULE_LAYOUT, 'run0'),
};
