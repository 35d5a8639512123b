import { UnrecoverableError as BullUnrecoverableError } from 'bullmq';
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { jobDuration, jobsCompleted, jobsFailed, jobTally, metricsRegistry } from './metrics.js';
import { UnrecoverableError } from './errors.js';

describe('process metrics', () => {
  it('carry the tickwork_ prefix once, not a doubled process_', async () => {
    const text = await metricsRegistry.metrics();
    expect(text).toMatch(/^tickwork_process_cpu_user_seconds_total /m);
    expect(text).toMatch(/^tickwork_nodejs_heap_size_used_bytes /m);
    expect(text).not.toContain('process_process');
  });
});

describe('job metrics kept as tallies', () => {
  it("export what prom-client's own Histogram and Counters export for the same runs", async () => {
    // prom-client's own metrics, in a registry of their own, fed the same runs as the tallies.
    const own = new Registry();
    const histogram = new Histogram({ name: 'tickwork_job_duration_seconds', help: 'Handler run time', labelNames: ['queue', 'job'], buckets: [0.005, 0.025, 0.1, 0.5, 1, 5, 30, 120, 600], registers: [own] });
    const completed = new Counter({ name: 'tickwork_jobs_completed_total', help: 'Handler runs that completed', labelNames: ['queue', 'job'], registers: [own] });
    const failed = new Counter({ name: 'tickwork_job_attempts_failed_total', help: 'Handler attempts that threw (retried or final)', labelNames: ['queue', 'job'], registers: [own] });
    const runs: [string, string, number, boolean][] = [
      ['mt-a', 'mt.one', 0.001, true],
      ['mt-a', 'mt.one', 0.005, true], // on a bound: counted in it (le is "less or equal")
      ['mt-a', 'mt.one', 0.2, false],
      ['mt-a', 'mt.two', 42, true],
      ['mt-b', 'mt.one', 900, false], // past every bound: only in +Inf
    ];
    const expose = async () => {
      const lines = (await metricsRegistry.metrics()).split('\n').filter((l) => l.includes('mt-'));
      const theirs = (await own.metrics()).split('\n').filter((l) => l.includes('mt-'));
      return { lines: lines.sort(), theirs: theirs.sort() };
    };
    for (const [queue, job, seconds, ok] of runs) {
      const t = jobTally(queue, job);
      t.observe(seconds);
      if (ok) t.completed();
      else t.failed();
      histogram.observe({ queue, job }, seconds);
      (ok ? completed : failed).inc({ queue, job });
    }
    const first = await expose();
    expect(first.lines.length).toBeGreaterThan(20);
    expect(first.lines).toEqual(first.theirs);
    // Collected twice: counts handed over once are not handed over again.
    jobTally('mt-a', 'mt.one').completed();
    completed.inc({ queue: 'mt-a', job: 'mt.one' });
    const second = await expose();
    expect(second.lines).toEqual(second.theirs);
    expect(second.lines).toContain('tickwork_jobs_completed_total{queue="mt-a",job="mt.one"} 3');
    // Read as JSON too (what tests and prom-client's aggregators read).
    const count = (await jobDuration.get()).values.find((v) => v.metricName === 'tickwork_job_duration_seconds_count' && v.labels.queue === 'mt-b');
    expect(count?.value).toBe(1);
    expect((await jobsFailed.get()).values.find((v) => v.labels.queue === 'mt-b')?.value).toBe(1);
    expect((await jobsCompleted.get()).values.find((v) => v.labels.job === 'mt.two')?.value).toBe(1);
  });
});

describe('UnrecoverableError', () => {
  it("is BullMQ's own class, importable from @tickwork/core", () => {
    expect(new UnrecoverableError('no')).toBeInstanceOf(BullUnrecoverableError);
  });
});
