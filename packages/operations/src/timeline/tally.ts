import { bucketOf } from './buckets.js';
import type { TimelineLayout } from './layout.js';
import type { TimelineRow } from './store.js';

/** Adds one to counter `f` of `row`. */
export function inc(row: Float64Array, f: number): void {
  row[f] = (row[f] as number) + 1;
}

/**
 * A timeline's counts in memory, one row per period of its finest ring (a minute for a queue, an hour for a
 * schedule), until the writer flushes them (writer.ts). What a job's end costs: reading the clock, and a few
 * additions to the current row; a new row (one small typed array) once per period.
 */
export class Tally {
  /** The period of the current row, and the row. */
  private period = -1;
  private row: Float64Array;
  private rows = new Map<number, Float64Array>();

  constructor(
    readonly layout: TimelineLayout,
    private readonly clock: () => number,
    /** The longest a row waits unflushed (Redis down): older ones are dropped, the rings have no room for them. */
    private readonly maxRows: number,
  ) {
    this.row = new Float64Array(layout.width);
    this.periodMs = (layout.rings[0] as { slotMs: number }).slotMs;
  }

  /** The length of one row's period (the finest ring's slot). */
  readonly periodMs: number;

  /** The row of now. */
  current(): Float64Array {
    const period = Math.floor(this.clock() / this.periodMs);
    return period === this.period ? this.row : this.turn(period);
  }

  /** Adds one to field `f` now. */
  bump(f: number): void {
    inc(this.current(), f);
  }

  /** Counts `ms` in the histogram whose buckets start at field `from`, now. */
  observe(from: number, ms: number): void {
    inc(this.current(), from + bucketOf(ms));
  }

  private turn(period: number): Float64Array {
    let row = this.rows.get(period);
    if (!row) {
      this.rows.set(period, (row = new Float64Array(this.layout.width)));
      if (this.rows.size > this.maxRows) this.dropOldest();
    }
    this.period = period;
    this.row = row;
    return row;
  }

  private dropOldest(): void {
    const oldest = Math.min(...this.rows.keys());
    this.rows.delete(oldest);
  }

  /** Takes the rows counted so far (nothing counted: none); `giveBack` returns them after a failed write. */
  take(): TimelineRow[] {
    if (this.rows.size === 0) return [];
    const taken = this.rows;
    this.rows = new Map();
    this.period = -1;
    return [...taken].map(([period, values]) => ({ at: period * this.periodMs, values }));
  }

  /** Adds rows a failed write took back in, to be written with the next flush. */
  giveBack(rows: readonly TimelineRow[]): void {
    for (const r of rows) {
      const period = Math.floor(r.at / this.periodMs);
      const row = this.rows.get(period);
      if (!row) {
        this.rows.set(period, Float64Array.from(r.values));
        continue;
      }
      for (let f = 1; f < row.length; f++) row[f] = (row[f] as number) + (r.values[f] ?? 0);
    }
    while (this.rows.size > this.maxRows) this.dropOldest();
    this.period = -1;
  }
}
