import { metricsRegistry, type Logger } from '@tickwork/core';
import { Gauge } from 'prom-client';
import type { ContractMismatch } from './contract/check.js';

/**
 * Where the engine says which way it runs: one log line per reason (never one per job) and two gauges. The
 * start-up check (engine.ts) reports every contract entry that does not hold; the fast paths report here too
 * when, at run time, an instance lacks what they use (a Worker without a member its prototype had, a client
 * without `runCommand`): each then takes BullMQ's own way for that worker or connection.
 */

const fastPath = new Gauge({
  name: 'tickwork_bullmq_fast_path',
  help: "1 while this process runs BullMQ through tickwork's fast paths, 0 on BullMQ's public paths only (the installed BullMQ does not match the engine's contract, or WORKER_BULLMQ_FAST_PATH=off)",
  registers: [metricsRegistry],
});
const mismatches = new Gauge({
  name: 'tickwork_bullmq_contract_mismatches',
  help: "Entries of the BullMQ engine's contract the installed BullMQ or ioredis does not match (each named once in the log)",
  registers: [metricsRegistry],
});

let log: Logger | undefined;
const reported = new Map<string, string>();

/** The logger reports go to (the worker's, set when its engine is made). */
export function useGuardLog(next: Logger): void {
  log = next;
}

export function setFastPath(on: boolean): void {
  fastPath.set(on ? 1 : 0);
}

/** Reports a mismatch found at run time, once per name; `what` says what this worker does instead. */
export function reportMismatch(m: ContractMismatch, what: string): void {
  if (reported.has(m.name)) return;
  reported.set(m.name, m.detail);
  mismatches.set(reported.size);
  log?.warn({ bullmqInternal: m.name, detail: m.detail }, `BullMQ does not match tickwork's engine contract at ${m.name}: ${what}`);
}

/** Every mismatch reported so far, by name (the start-up check's and those found at run time). */
export function reportedMismatches(): ContractMismatch[] {
  return [...reported].map(([name, detail]) => ({ name, detail }));
}

/** Counts the start-up check's mismatches without logging each (engine.ts logs them in one line). */
export function noteMismatches(list: readonly ContractMismatch[]): void {
  for (const m of list) reported.set(m.name, m.detail);
  mismatches.set(reported.size);
}
