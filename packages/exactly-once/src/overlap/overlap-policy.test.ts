import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { createCatalog } from '@tickwork/core';
import { defineJob, type OverlapPolicy } from '@tickwork/core';
import { JobDefinitionError } from '@tickwork/core';
import { idempotencyKeyOf, nominalTimeOf } from '@tickwork/core';

const job = (overlap: unknown) =>
  defineJob({
    name: 'x.job',
    queue: 'x',
    schema: z.object({}),
    schedule: { every: { seconds: 5 }, tz: 'UTC', overlap: overlap as OverlapPolicy },
    handler: async () => undefined,
  });

describe('schedule.overlap', () => {
  it('accepts the three policies and no policy', () => {
    for (const p of ['skip', 'allow', 'buffer-one', undefined]) expect(() => createCatalog([job(p)])).not.toThrow();
  });

  it('refuses an unknown policy with a JobDefinitionError listing the valid ones', () => {
    expect(() => createCatalog([job('skipp')])).toThrow(JobDefinitionError);
    expect(() => createCatalog([job('skipp')])).toThrow(/"skip", "allow", "buffer-one"/);
  });
});

describe('occurrence identity', () => {
  it('reads the nominal time from the job id of an `every` scheduler job (BullMQ leaves prevMillis unset)', () => {
    const delivery = { id: 'repeat:x.job:1767225600000', name: 'x.job', data: {}, repeatJobKey: 'x.job' };
    expect(nominalTimeOf(delivery)?.toISOString()).toBe('2026-01-01T00:00:00.000Z');
    expect(idempotencyKeyOf(job('skip'), delivery, {})).toBe('x.job@2026-01-01T00:00:00.000Z');
  });
});
