/**
 * `pnpm bench:soak`: what Redis keeps per completed run, measured on the stock worker at a steady rate.
 *
 * A private redis-server and the real worker process (apps/worker, default settings but a short
 * full-record span) run no-op jobs added at SOAK_RATE jobs/s (default 2,000) with the catalog's default job
 * options, in two phases:
 * 1. jobs named by a job id BullMQ generates (most jobs: `enqueue(job, data)`): what the keyspace grows by
 *    per completed run over the phase's second half (once the capped structures have filled), by component
 *    (a full scan: this is a bench, not production), projected for a deployment running such jobs at
 *    1,000 jobs/s with the default settings for as long as any default window lasts;
 * 2. jobs with an `idempotencyKey`, whose done records the worker compacts (soak-keyed.ts): a full record's
 *    cost for its first minutes, a compacted run's (used_memory freed by deleting the slots filled at the
 *    steady rate), projected to 1,000 keyed runs/s with a 24-hour window.
 * Targets: at most 1 GiB, with every duplicate window honoured (issue 9 for plain jobs, issue 37 for keyed).
 */
import { appEntry, freePort, startApp, startRedisServer, waitFor } from '@tickwork/testkit';
import type { Component } from '@tickwork/operations';
import { createEnqueue, createLogger, createRedis, QueueSet } from '@tickwork/core';
import type { Redis } from 'ioredis';
import { fileURLToPath } from 'node:url';
import { catalog, soakKeyed, soakNoop } from './soak-catalog.js';
import { keyedPhase, keyedReport, type KeyedResult } from './soak-keyed.js';
import { completedCount, componentsNow, keptBytes, mib, out, usedMemory } from './soak-measure.js';

const RATE = Number(process.env.SOAK_RATE ?? 2000);
const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
/** The worker's full-record span (IDEMPOTENCY_FULL_RECORD_SECONDS; default 300): short, so compaction happens within the soak. */
const FULL_RECORD_SECONDS = process.env.SOAK_FULL_RECORD_SECONDS ?? '5';
const TARGET_BYTES = 1024 ** 3;
const PROJECTED_RATE = 1000;
const DAY_S = 24 * 3600;
const WEEK_S = 7 * DAY_S;

interface PhaseResult {
  name: string;
  added: number;
  completed: number;
  seconds: number;
  bytesPerRun: number;
  plateauBytes: number;
  components: Map<Component, { keys: number; bytes: number }>;
  projectedBytes: number;
  windowS: number;
}

async function main(): Promise<void> {
  const redisServer = await startRedisServer();
  const redis = redisServer.client();
  const port = await freePort();
  const worker = startApp(appEntry('worker'), {
    REDIS_URL: redisServer.url,
    JOBS_MODULE: fileURLToPath(new URL('./soak-catalog.js', import.meta.url)),
    PORT: String(port),
    LOG_LEVEL: 'warn',
    WORKER_CONCURRENCY: process.env.SOAK_CONCURRENCY ?? '50',
    IDEMPOTENCY_FULL_RECORD_SECONDS: FULL_RECORD_SECONDS,
  });
  try {
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok === true, {
      timeoutMs: 30_000,
      what: 'the worker to answer /healthz',
    });
    const producer = createRedis(redisServer.url, 'command');
    const queues = new QueueSet(producer, 'tickwork', createLogger('soak', 'silent'));
    const enqueue = createEnqueue(catalog, queues);
    out(`tickwork soak: the stock worker (concurrency ${process.env.SOAK_CONCURRENCY ?? '50'}, default retention settings but a ` +
      `${FULL_RECORD_SECONDS} s full-record span), ${RATE} jobs/s for ${SECONDS} s per phase, private redis-server\n`);
    const baseline = await usedMemory(redis);
    const results: PhaseResult[] = [];
    const completed = () => completedCount(port);
    results.push(await phase(redis, queues, completed, 'generated job ids', baseline, WEEK_S, (i) => enqueue(soakNoop, { i })));
    const keyed = await keyedPhase(redis, queues, completed, baseline, RATE, SECONDS, (i) => enqueue(soakKeyed, { i, round: 'r' }));
    report(results, keyed);
    await queues.close();
    producer.disconnect();
  } finally {
    await worker.stop('SIGTERM');
    await redisServer.stop();
  }
}

async function phase(
  redis: Redis,
  queues: QueueSet,
  completedCount: () => Promise<number>,
  name: string,
  baseline: number,
  windowS: number,
  add: (i: number) => Promise<unknown>,
): Promise<PhaseResult> {
  const completedBefore = await completedCount();
  const started = Date.now();
  let added = 0;
  // Two halves, each at the steady rate and then drained: the capped structures fill during the first, so
  // what the keyspace grows by over the second is what Redis keeps per run.
  const half = async () => {
    const t0 = Date.now();
    const n0 = added;
    while (Date.now() - t0 < (SECONDS / 2) * 1000) {
      const due = n0 + Math.floor(((Date.now() - t0) / 1000) * RATE);
      const batch: Promise<unknown>[] = [];
      while (added < due) batch.push(add(added++));
      await Promise.all(batch);
      await new Promise((r) => setTimeout(r, 20));
    }
    await waitFor(async () => (await queues.get('soak').getJobCountByTypes('wait', 'active', 'delayed', 'prioritized')) === 0, {
      timeoutMs: 300_000,
      what: 'the backlog to drain',
    });
    return { completed: (await completedCount()) - completedBefore, components: await componentsNow(redis) };
  };
  const mid = await half();
  const end = await half();
  const seconds = (Date.now() - started) / 1000;
  const bytesPerRun = (keptBytes(end.components) - keptBytes(mid.components)) / Math.max(1, end.completed - mid.completed);
  // What does not grow with runs: everything but the per-run records, which the projection counts instead.
  const perRun = end.components.get('ledger')?.bytes ?? 0;
  const plateauBytes = (await usedMemory(redis)) - baseline - perRun;
  const projectedBytes = plateauBytes + Math.max(0, bytesPerRun) * PROJECTED_RATE * windowS;
  out(`  ${name}: added ${added}, completed ${end.completed} in ${seconds.toFixed(0)} s (${(end.completed / seconds).toFixed(0)} jobs/s with drains)\n`);
  return { name, added, completed: end.completed, seconds, bytesPerRun, plateauBytes, components: end.components, projectedBytes, windowS };
}

function report(results: PhaseResult[], keyed: KeyedResult): void {
  out('\nRedis kept by component at the end of each phase (full scan, MEMORY USAGE per key):\n');
  for (const r of [...results, { name: 'idempotencyKey (compacted)', components: keyed.components }]) {
    out(`  after "${r.name}":\n`);
    for (const [component, { keys, bytes }] of [...r.components].sort((a, b) => b[1].bytes - a[1].bytes)) {
      out(`    ${component.padEnd(22)} ${String(keys).padStart(8)} keys ${mib(bytes).padStart(10)}\n`);
    }
  }
  out('  (kept per completed run: growth of the keyspace, summed MEMORY USAGE, over the second half of the phase)\n');
  out(`\nProjected steady state at ${PROJECTED_RATE} jobs/s with the default settings (target <= 1 GiB):\n`);
  for (const r of results) {
    out(
      `  ${r.name.padEnd(20)} kept per completed run ${r.bytesPerRun.toFixed(1).padStart(7)} bytes ` +
        `(for ${r.windowS === DAY_S ? '24 h, the default window' : '7 days, the longest default'}), ` +
        `capped structures ${mib(r.plateauBytes)}, projected ${mib(r.projectedBytes)}  ` +
        `${r.projectedBytes <= TARGET_BYTES ? 'MET' : 'NOT MET'}\n`,
    );
  }
  keyedReport(keyed, PROJECTED_RATE, DAY_S, TARGET_BYTES);
}

main().catch((err: unknown) => {
  process.stderr.write(`soak failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
