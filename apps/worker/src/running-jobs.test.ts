import { createCatalog, defineJob } from '@tickwork/core';
import type { Job } from 'bullmq';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { JobRun } from './pipeline/job-run.js';
import { createProcessor } from './processor.js';
import type { ProcessorDeps } from './pipeline/deps.js';
import { RunningJobs } from './running-jobs.js';

const job = defineJob({ name: 'rj.noop', queue: 'rj', schema: z.object({}), handler: async () => null });
const deps = { catalog: createCatalog([job]), log: pino({ level: 'silent' }) } as unknown as ProcessorDeps;
const jobOf = (id: string) => ({ id, name: job.name, queueName: 'rj', attemptsMade: 0, opts: {} }) as unknown as Job;

describe('RunningJobs (aborts without an AbortController per job)', () => {
  it('gives BullMQ a processor without a signal parameter, so BullMQ makes no AbortController per job', () => {
    // BullMQ 6 makes the controller only for a processor declaring a third parameter (processor.length >= 3).
    expect(createProcessor(deps).length).toBeLessThan(3);
  });

  it('aborts the running job it is asked to, once, telling every listener; other jobs and queues are untouched', () => {
    const running = new RunningJobs();
    const a = new JobRun(deps, jobOf('1'), 't');
    const b = new JobRun(deps, jobOf('2'), 't');
    running.add(a);
    running.add(b);
    const heard: unknown[] = [];
    a.onAbort((r) => heard.push(['first', r]));
    const stop = a.onAbort((r) => heard.push(['removed', r]));
    a.onAbort((r) => heard.push(['third', r]));
    stop();
    expect(running.cancel('other-queue', '1', 'cancelled by x')).toBe(false);
    expect(running.cancel('rj', '1', 'cancelled by x')).toBe(true);
    running.cancelAll('worker shutting down');
    expect(heard).toEqual([
      ['first', 'cancelled by x'],
      ['third', 'cancelled by x'],
    ]);
    expect([a.aborted, a.reason, b.aborted, b.reason]).toEqual([true, 'cancelled by x', true, 'worker shutting down']);
    running.delete(a);
    expect(running.cancel('rj', '1', 'again')).toBe(false);
  });

  it('abortAll aborts every running job with one reason, counting them, even when an abort ends its run at once', () => {
    const running = new RunningJobs();
    const runs = ['1', '2', '3'].map((id) => new JobRun(deps, jobOf(id), 't'));
    for (const r of runs) running.add(r);
    // A run whose abort ends it removes itself from the list while abortAll walks it.
    runs[0]?.onAbort(() => running.delete(runs[0] as JobRun));
    const reason = new Error('redis restarted');
    expect(running.abortAll(reason)).toBe(3);
    expect(runs.map((r) => r.reason)).toEqual([reason, reason, reason]);
    expect(running.size).toBe(2);
  });
});
