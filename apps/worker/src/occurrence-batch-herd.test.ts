/**
 * A small herd through real scheduler and worker processes: runtime schedules of one job due at the same
 * instants are added ahead in batches of occurrences (SCHEDULE_BATCH_MAX), and each occurrence runs once,
 * its history record naming the batch that ran it.
 */
import { fileURLToPath } from 'node:url';
import { OCCURRENCE_BATCH_JOB, occurrenceBatchOf } from '@tickwork/core';
import { createSchedules, readHistory } from '@tickwork/schedules';
import { appEntry, freePort, startApp, waitFor } from '@tickwork/testkit';
import { expect, it } from 'vitest';
import { BATCH_FX, catalog, fxBatched } from './testing/occurrence-batch-fixtures.js';
import { useWorkerProcesses } from './testing/worker-processes.js';

const JOBS_MODULE = fileURLToPath(new URL('../dist/testing/occurrence-batch-fixtures.js', import.meta.url));
const w = useWorkerProcesses({ jobsModule: JOBS_MODULE, env: { WORKER_QUEUES: fxBatched.queue } });
const SCHEDULES = 12;

it('runtime schedules due together travel in batches of at most SCHEDULE_BATCH_MAX, and each occurrence runs once, its record naming its batch', async () => {
  const schedules = createSchedules({ redis: w.redis, queues: w.queues, catalog });
  const ids = Array.from({ length: SCHEDULES }, (_, i) => `herd-${i}`);
  for (const id of ids) await schedules.upsert(id, { job: fxBatched.name, every: { seconds: 10 }, tz: 'UTC', data: {} });
  await w.start();
  const scheduler = w.track(
    startApp(appEntry('scheduler'), {
      REDIS_URL: w.server.url,
      JOBS_MODULE,
      PORT: String(await freePort()),
      SCHEDULE_TICK_MS: '100',
      // Every 10 s, so each occurrence is added ahead (the window above the look-ahead, below the interval).
      SCHEDULE_ADD_AHEAD_MS: '8000',
      SCHEDULE_BATCH_MAX: '5',
    }),
  );
  await scheduler.waitForLog((l) => l.msg === 'scheduler ready', 'scheduler ready');

  // An instant whose occurrences were added ahead (the first ones, due within the look-ahead when the
  // scheduler starts, are added at their time, one job each) and all took effect: its batches, 12 at most 5
  // a batch as three of four, each naming its occurrences' ids.
  const { byTime, batchJobs, batches } = await waitFor(
    async () => {
      const counted = await w.redis.hgetall(BATCH_FX.effects);
      const jobs = (await w.queues.get(fxBatched.queue).getJobs(['completed'])).filter((j) => j.name === OCCURRENCE_BATCH_JOB);
      const nominals = new Set(jobs.map((j) => occurrenceBatchOf(j.data).runs[0]?.run.nominal));
      for (const nominal of nominals) {
        const ofInstant = jobs.filter((j) => occurrenceBatchOf(j.data).runs[0]?.run.nominal === nominal);
        const ids = ofInstant.flatMap((j) => occurrenceBatchOf(j.data).runs.map((o) => o.id));
        if (ids.length === SCHEDULES && ids.every((id) => counted[id] !== undefined)) {
          return { byTime: { jobIds: ids, counted }, batchJobs: ofInstant, batches: ofInstant.map((j) => occurrenceBatchOf(j.data)) };
        }
      }
      return undefined;
    },
    { timeoutMs: 45_000, what: 'every schedule ran in batches at one instant' },
  );
  for (const jobId of byTime.jobIds) expect(byTime.counted[jobId], jobId).toBe('1');
  expect(batches.map((b) => b.runs.length)).toEqual([4, 4, 4]);
  expect(new Set(byTime.jobIds).size).toBe(SCHEDULES);

  // Each schedule's history has the occurrence completed, naming the batch that ran it.
  const batchIds = new Set(batchJobs.map((j) => String(j.id)));
  for (const id of ids) {
    const record = await waitFor(
      async () => (await readHistory(w.redis, 'tickwork', id, 20)).find((r) => byTime.jobIds.some((jobId) => jobId.endsWith(`@${r.nominal.replaceAll(':', '')}`)) && r.outcome),
      { what: `${id}'s record of the instant` },
    );
    expect(record.outcome).toBe('completed');
    expect(batchIds.has(record.jobId ?? ''), record.jobId).toBe(true);
  }
});
