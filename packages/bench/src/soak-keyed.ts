/**
 * The soak's keyed phase: runs with an `idempotencyKey`, whose done records the worker's sweeper compacts to
 * fingerprints (packages/exactly-once compact-lua.ts). A 24-hour window cannot be watched in a soak, but a
 * compacted run's cost does not depend on the window: its slot (a twelfth of the window) is sized for
 * the runs expected in it, so its sets fill alike whatever the window. So the soak's keyed job has a
 * 2-minute window (slots of 10 s), the worker a short full-record span (SOAK_FULL_RECORD_SECONDS, default
 * 5), and the slots filled entirely at the steady rate are measured, then projected over 24 hours.
 */
import { DEFAULT_FULL_RECORD_MS } from '@tickwork/exactly-once';
import type { QueueSet } from '@tickwork/core';
import { waitFor } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { SOAK_KEYED_WINDOW_MS } from './soak-catalog.js';
import { componentsNow, keysMatching, memoryUsage, mib, out, usedMemory, type Components } from './soak-measure.js';

export interface KeyedResult {
  added: number;
  completed: number;
  seconds: number;
  /** A done run's full record and its stage entry, before compaction (MEMORY USAGE), and how many were summed. */
  fullBytesPerRun: number;
  fullRuns: number;
  /** The runs in the slots filled at the steady rate, and what each costs compacted: MEMORY USAGE, and used_memory freed by deleting them. */
  compactedRuns: number;
  compactedBytesPerRun: number;
  usedMemoryPerRun: number;
  plateauBytes: number;
  components: Components;
}

const ROOT = 'tickwork:ledger-fp';

export async function keyedPhase(
  redis: Redis,
  queues: QueueSet,
  completedCount: () => Promise<number>,
  baseline: number,
  rate: number,
  seconds: number,
  add: (i: number) => Promise<unknown>,
): Promise<KeyedResult> {
  const completedBefore = await completedCount();
  const started = Date.now();
  let added = 0;
  while (Date.now() - started < seconds * 1000) {
    const due = Math.floor(((Date.now() - started) / 1000) * rate);
    const batch: Promise<unknown>[] = [];
    while (added < due) batch.push(add(added++));
    await Promise.all(batch);
    await new Promise((r) => setTimeout(r, 20));
  }
  // Before the sweeper catches up: the full records (not their steps: a done run has none) and the stages.
  const records = (await keysMatching(redis, 'tickwork:ledger:*')).filter((k) => !k.endsWith(':steps'));
  const stages = await keysMatching(redis, `${ROOT}:*:s:*`);
  const fullBytes = [...(await memoryUsage(redis, records)), ...(await memoryUsage(redis, stages))].reduce((a, b) => a + b, 0);
  await waitFor(async () => (await queues.get('soak').getJobCountByTypes('wait', 'active', 'delayed', 'prioritized')) === 0, {
    timeoutMs: 300_000,
    what: 'the backlog to drain',
  });
  await waitFor(async () => (await redis.zcard(`${ROOT}:stages`)) === 0 && (await keysMatching(redis, 'tickwork:ledger:*')).length === 0, {
    timeoutMs: 120_000,
    intervalMs: 500,
    what: 'the sweeper to compact every done record',
  });
  const completed = (await completedCount()) - completedBefore;
  const elapsed = (Date.now() - started) / 1000;
  const components = await componentsNow(redis);
  const plateauBytes = (await usedMemory(redis)) - baseline - (components.get('ledger')?.bytes ?? 0);

  // The fingerprint sets (`<root>:<window>:<slot>:<depth>:<index>`) by slot; the first and last slots were
  // filled only in part (the rate rose and fell within them), the others at the steady rate.
  const bySlot = new Map<string, string[]>();
  for (const key of await keysMatching(redis, `${ROOT}:${SOAK_KEYED_WINDOW_MS}:*:*:*`)) {
    const slot = key.slice(ROOT.length + 1).split(':')[1] ?? '';
    bySlot.set(slot, [...(bySlot.get(slot) ?? []), key]);
  }
  const slots = [...bySlot.keys()].sort();
  const interior = slots.length >= 3 ? slots.slice(1, -1) : slots;
  const sets = interior.flatMap((s) => bySlot.get(s) ?? []);
  const pipeline = redis.pipeline();
  for (const set of sets) pipeline.scard(set);
  const compactedRuns = ((await pipeline.exec()) ?? []).reduce((sum, [, n]) => sum + Number(n ?? 0), 0);
  const compactedBytes = (await memoryUsage(redis, sets)).reduce((a, b) => a + b, 0);
  // What Redis frees when they go: the figure that adds up to used_memory (keys, TTLs, allocator classes).
  const before = await usedMemory(redis);
  for (let i = 0; i < sets.length; i += 500) await redis.del(...sets.slice(i, i + 500));
  const freed = before - (await usedMemory(redis));
  out(`  idempotencyKey (compacted): added ${added}, completed ${completed} in ${elapsed.toFixed(0)} s; ` +
    `${slots.length} slots of ${SOAK_KEYED_WINDOW_MS / 12_000} s, ${interior.length} filled at the steady rate (${compactedRuns} runs, ${sets.length} sets)\n`);
  return {
    added,
    completed,
    seconds: elapsed,
    fullBytesPerRun: fullBytes / Math.max(1, records.length),
    fullRuns: records.length,
    compactedRuns,
    compactedBytesPerRun: compactedBytes / Math.max(1, compactedRuns),
    usedMemoryPerRun: freed / Math.max(1, compactedRuns),
    plateauBytes,
    components,
  };
}

/**
 * The keyed runs' steady state at `rate` runs/s with the default settings: each compacted run is kept its
 * 24-hour window plus, on average, half a slot (a 24th of the window); each full record, on average, the
 * full span plus half a stage bucket and half the sweeper's pause (its default 5 minutes, 1 minute, 5 s).
 */
export function keyedProjection(r: KeyedResult, rate: number, dayS: number): { compacted: number; full: number; total: number } {
  const compacted = r.usedMemoryPerRun * rate * dayS * (1 + 1 / 24);
  const fullLifeS = DEFAULT_FULL_RECORD_MS / 1000 + Math.min(60, DEFAULT_FULL_RECORD_MS / 1000) / 2 + 2.5;
  const full = r.fullBytesPerRun * rate * fullLifeS;
  return { compacted, full, total: r.plateauBytes + compacted + full };
}

export function keyedReport(r: KeyedResult, rate: number, dayS: number, targetBytes: number): void {
  const p = keyedProjection(r, rate, dayS);
  out(
    `  idempotencyKey       full record ${r.fullBytesPerRun.toFixed(1)} bytes a run for its first minutes (${r.fullRuns} sampled), ` +
      `compacted ${r.usedMemoryPerRun.toFixed(2)} bytes a run (used_memory; ${r.compactedBytesPerRun.toFixed(2)} by MEMORY USAGE) for the rest of 24 h\n` +
      `                       at ${rate} keyed runs/s for 24 h: compacted ${mib(p.compacted)} + full records ${mib(p.full)} + capped structures ${mib(r.plateauBytes)} ` +
      `= ${mib(p.total)}  ${p.total <= targetBytes ? 'MET' : 'NOT MET'}\n`,
  );
}
