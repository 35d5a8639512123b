/**
 * A batch of occurrences whose worker is killed -9 mid-batch (real worker processes, default recovery
 * settings but a short dead-after time): the batch is taken back and delivered again, and the worker that
 * gets it hands every occurrence on as a job of its own; those that ran answer from their ledger records,
 * the one killed mid-run resumes once its holder counts as dead, the rest run. Every occurrence's effect
 * happens exactly once and none is lost.
 */
import { fileURLToPath } from 'node:url';
import { OCCURRENCE_BATCH_JOB, type BatchedOccurrence } from '@tickwork/core';
import { readHistory } from '@tickwork/schedules';
import { waitFor } from '@tickwork/testkit';
import { expect, it } from 'vitest';
import { BATCH_FX, fxBatched } from './testing/occurrence-batch-fixtures.js';
import { useWorkerProcesses } from './testing/worker-processes.js';

const w = useWorkerProcesses({
  jobsModule: fileURLToPath(new URL('../dist/testing/occurrence-batch-fixtures.js', import.meta.url)),
  // Concurrency 3: the batch runs three occurrences at a time, so a kill finds some done, some mid-run, some not started.
  env: { WORKER_HEARTBEAT_MS: '250', WORKER_DEAD_AFTER_MS: '1500', WORKER_QUEUES: fxBatched.queue, WORKER_CONCURRENCY: '3' },
});

it('a worker killed -9 mid-batch: every occurrence of the batch takes effect exactly once, none lost', async () => {
  const runs: BatchedOccurrence[] = Array.from({ length: 8 }, (_, i) => ({
    id: `crash-${i}@now`,
    run: { schedule: `crash-${i}`, nominal: Date.now(), catchUp: false },
    data: { sleepMs: 400 },
  }));
  const holder = await w.start();
  await w.queues.get(fxBatched.queue).add(OCCURRENCE_BATCH_JOB, { job: fxBatched.name, runs }, { jobId: 'batch-crash', attempts: 10 });
  // Killed while occurrences sleep before their effects: some done, some held mid-run, the rest not started.
  await waitFor(async () => (await w.redis.llen(BATCH_FX.starts)) >= 4, { timeoutMs: 20_000, what: 'the fourth occurrence started' });
  await holder.stop('SIGKILL');
  await w.start();

  const effects = await waitFor(
    async () => {
      const counted = await w.redis.hgetall(BATCH_FX.effects);
      return runs.every((o) => counted[o.id] !== undefined) ? counted : undefined;
    },
    { timeoutMs: 60_000, what: 'every occurrence took effect' },
  );
  for (const o of runs) expect(effects[o.id], o.id).toBe('1');
  for (const o of runs) {
    await waitFor(async () => (await readHistory(w.redis, 'tickwork', o.run.schedule, 5))[0]?.outcome === 'completed', { what: `${o.id} recorded completed` });
  }
  // The batch was delivered again and handed every occurrence on; the killed one's job ran it again.
  const batch = await w.queues.get(fxBatched.queue).getJob('batch-crash');
  expect(batch?.returnvalue).toEqual({ ran: 0, handedOn: 8 });
  // A run killed mid-run started again (twice in all); the rest once; none took effect twice (above).
  const starts = await w.redis.lrange(BATCH_FX.starts, 0, -1);
  const startsOf = runs.map((o) => starts.filter((s) => s.startsWith(`${o.id} `)).length);
  expect(startsOf.every((n) => n === 1 || n === 2), String(startsOf)).toBe(true);
  expect(startsOf.filter((n) => n === 2).length).toBeGreaterThan(0);
});
