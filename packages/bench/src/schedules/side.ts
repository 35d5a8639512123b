/** What one side (tickwork or BullMQ) measured for one N: the figures the report prints. */
import type { FireResult } from './harness.js';

export interface FireRow {
  /** Scheduler processes (null: BullMQ, which has none; its Worker creates the next jobs). */
  replicas: number | null;
  /** Spawn until /readyz of the slowest replica, ms (null: not applicable). */
  startMs: number | null;
  fire: FireResult;
}

export interface SideResult {
  system: 'tickwork' | 'bullmq';
  n: number;
  upsertsPerS: number;
  /** Set when some schedules were stored another way than the timed upserts (said in the output). */
  upsertNote?: string;
  bytesPerSchedule: number;
  rows: FireRow[];
}

export interface BenchSettings {
  fireSeconds: number;
  warmupSeconds: number;
  concurrency: number;
  workerConcurrency: number;
  workers: number;
  /** Upserts timed from this process; those beyond go through fill processes (tickwork-side.ts). */
  timedUpserts: number;
  fillProcesses: number;
}
