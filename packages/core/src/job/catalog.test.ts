import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createCatalog } from './catalog.js';
import { defineBatchJob, defineJob, type ScheduleSpec } from './define-job.js';
import { JobDefinitionError, UnknownJobError } from '../errors.js';

const job = (name: string, schedule?: ScheduleSpec, schema: z.ZodObject = z.object({})) =>
  defineJob({ name, queue: 'q', schema, schedule, handler: async () => undefined });

describe('createCatalog', () => {
  it('indexes jobs by name and lists their queues once', () => {
    const catalog = createCatalog([job('a.one'), defineJob({ name: 'b.two', queue: 'other', schema: z.object({}), handler: async () => 1 })]);
    expect(catalog.get('a.one')?.queue).toBe('q');
    expect(catalog.queues).toEqual(['other', 'q']);
  });

  it('rejects a bad cron pattern, naming the job and the pattern', () => {
    expect(() => createCatalog([job('billing.bad', { pattern: '61 * * * *', tz: 'UTC' })])).toThrowError(
      /job "billing.bad": schedule.pattern "61 \* \* \* \*" is not a valid cron expression/,
    );
  });

  it('rejects an unknown timezone, naming the job and the zone', () => {
    const err = (() => {
      try {
        createCatalog([job('reports.tz', { pattern: '0 8 * * *', tz: 'America/Nowhere' })]);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(JobDefinitionError);
    expect((err as Error).message).toContain('job "reports.tz": schedule.tz "America/Nowhere" is not an IANA timezone');
  });

  it('rejects a missing timezone (the type requires it; runtime checks untyped callers too)', () => {
    const spec = { pattern: '0 8 * * *' } as unknown as ScheduleSpec;
    expect(() => createCatalog([job('no.tz', spec)])).toThrowError(/schedule.tz undefined is not an IANA timezone/);
  });

  it('rejects an interval under a second and a schedule with neither pattern nor every', () => {
    expect(() => createCatalog([job('fast', { every: { milliseconds: 10 }, tz: 'UTC' })])).toThrowError(/at least 1 second/);
    expect(() => createCatalog([job('empty', { tz: 'UTC' } as unknown as ScheduleSpec)])).toThrowError(/needs a cron pattern or an every/);
  });

  it('rejects duplicate names and names BullMQ cannot store', () => {
    expect(() => createCatalog([job('dup'), job('dup')])).toThrowError(/job "dup": defined twice/);
    expect(() => createCatalog([job('has:colon')])).toThrowError(/name must be/);
  });

  it('validates static schedule data against the schema at start', () => {
    const schema = z.object({ region: z.enum(['eu', 'us']) });
    expect(() => createCatalog([job('data.bad', { every: { minutes: 1 }, tz: 'UTC', data: { region: 'mars' } }, schema)])).toThrow(
      /^job "data\.bad": schedule\.data does not match the job's schema \(region: Invalid option/,
    );
    // No data at all: the message says where it goes.
    expect(() => createCatalog([job('data.none', { every: { minutes: 1 }, tz: 'UTC' }, schema)])).toThrow(/set it in the schedule, e\.g\. schedule: \{ \.\.\., data:/);
  });

  it('require() names the known jobs when a name is unknown', () => {
    const catalog = createCatalog([job('a.one')]);
    expect(() => catalog.require('nope')).toThrowError(new UnknownJobError('nope', ['a.one']));
    expect(() => catalog.require('nope')).toThrowError(/unknown job "nope"; known jobs: a.one/);
  });
});

describe('batch jobs in the catalog', () => {
  const batch = (name: string, spec: Partial<{ size: number; concurrency: number; keepCompleted: number }> = {}, queue = 'bq') =>
    defineBatchJob({ name, queue, schema: z.object({ n: z.number() }), batch: { size: 10, handler: async () => undefined, ...spec } });

  it('finds a batch job by its queue', () => {
    const def = batch('b.sum');
    const catalog = createCatalog([def, job('a.plain')]);
    expect(catalog.batchJobOf('bq')?.name).toBe('b.sum');
    expect(catalog.batchJobOf('q')).toBeUndefined();
    expect(def.batch?.size).toBe(10);
  });

  it('rejects a batch size outside 1..1000, a concurrency outside 1..64 and a negative keepCompleted, naming the job', () => {
    for (const size of [0, 1001, 2.5]) expect(() => createCatalog([batch('b.size', { size })])).toThrowError(/job "b.size": batch.size .* must be an integer from 1 to 1000/);
    expect(() => createCatalog([batch('b.conc', { concurrency: 65 })])).toThrowError(/batch.concurrency 65 must be an integer from 1 to 64/);
    expect(() => createCatalog([batch('b.keep', { keepCompleted: -1 })])).toThrowError(/batch.keepCompleted -1 must be a whole number/);
  });

  it("rejects a batch job sharing its queue: the batch runner takes every job of the queue", () => {
    expect(() => createCatalog([batch('b.one'), job('a.two'), defineJob({ name: 'a.three', queue: 'bq', schema: z.object({}), handler: async () => 1 })])).toThrowError(
      /job "b.one": is a batch job, so queue "bq" must be its alone, but a.three uses it too/,
    );
  });

  it('rejects what a batch cannot honour per job: a schedule, an idempotency key, a priority, a rate limit', () => {
    const base = batch('b.opts');
    for (const extra of [{ schedule: { every: { minutes: 1 }, tz: 'UTC' } }, { idempotencyKey: () => 'k' }, { priority: 1 }, { rateLimit: { max: 1, duration: { seconds: 1 } } }]) {
      const option = Object.keys(extra)[0] as string;
      expect(() => createCatalog([{ ...base, ...extra }])).toThrowError(new RegExp(`a batch job cannot set ${option}`));
    }
  });
});
