import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createCatalog } from './catalog.js';
import { defineJob, type ScheduleSpec } from './define-job.js';
import { JobDefinitionError, UnknownJobError } from './errors.js';

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
