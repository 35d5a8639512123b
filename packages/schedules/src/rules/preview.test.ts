import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '@tickwork/core';
import { previewSchedule } from './preview.js';

const job = defineJob({
  name: 'ny.early',
  queue: 'q',
  schema: z.object({}),
  schedule: { pattern: '30 2 * * *', tz: 'America/New_York', missed: 'once' },
  handler: async () => undefined,
});

describe('previewSchedule', () => {
  it('lists the next fire times in tz and UTC and marks the DST transition and the shifted time', () => {
    const preview = previewSchedule(job, { count: 3, from: new Date('2026-03-07T00:00:00Z') });
    expect(preview).toMatchObject({
      name: 'ny.early',
      pattern: '30 2 * * *',
      tz: 'America/New_York',
      policies: { dst: { gap: 'shift', fold: 'once' }, missed: 'once', maxCatchUp: 10 },
    });
    expect(preview.next).toEqual([
      { utc: '2026-03-07T07:30:00.000Z', local: '2026-03-07T02:30:00.000-05:00', kind: 'regular' },
      {
        utc: '2026-03-08T07:30:00.000Z',
        local: '2026-03-08T03:30:00.000-04:00',
        kind: 'gap-shifted',
        dstTransition: { from: 'UTC-05:00', to: 'UTC-04:00' },
      },
      { utc: '2026-03-09T06:30:00.000Z', local: '2026-03-09T02:30:00.000-04:00', kind: 'regular' },
    ]);
  });
});
