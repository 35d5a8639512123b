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
  env: { WORKER_HEARTBEAT_MS: '250', WORKER_DEAD_AFTER_MS: '1500', WORKER_QUEUES: fxBatched.queue },
});

it('a worker killed -9 mid-batch: every occurrence of the batch takes effect exactly once, none lost', async () => {
  const runs: BatchedOccurrence[] = Array.from({ length: 8 }, (_, i) => ({
    id: `crash-${i}@now`,
    run: { schedule: `crash-${i}`, nominal: Date.now(), catchUp: false },
    data: { sleepMs: 400 },
  }));
  const holder = await w.start();
  await w.queues.get(fxBatched.queue).add(OCCURRENCE_BATCH_JOB, { job: fxBatched.name, runs }, { jobId: 'batch-crash', attempts: 10 });
  // Killed while its third occurrence sleeps before its effect: two done, one held, five not started.
  await waitFor(async () => (await w.redis.llen(BATCH_FX.starts)) >= 3, { timeoutMs: 20_000, what: 'the third occurrence started' });
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
  // Nothing ran twice to its effect; the killed run started twice, the two done before the kill once each.
  const starts = await w.redis.lrange(BATCH_FX.starts, 0, -1);
  expect(starts.filter((s) => s.startsWith('crash-0@'))).toHaveLength(1);
  expect(starts.filter((s) => s.startsWith('crash-2@'))).toHaveLength(2);
});
