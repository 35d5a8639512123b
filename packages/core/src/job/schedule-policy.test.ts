import { describe, expect, it } from 'vitest';
import type { ScheduleSpec } from './define-job.js';
import { JobDefinitionError } from '../errors.js';
import { DEFAULT_CATCH_UP_WINDOW_MS, policiesOf } from './schedule-policy.js';
import { validateSchedule } from './schedule-spec.js';

const bad = (spec: Record<string, unknown>) => () => validateSchedule('demo.job', spec as unknown as ScheduleSpec);

describe('schedule validation', () => {
  it('fills documented defaults', () => {
    expect(policiesOf('j', { pattern: '0 0 * * *', tz: 'UTC' })).toEqual({
      dst: { gap: 'shift', fold: 'once' },
      missed: 'skip',
      catchUpWindowMs: DEFAULT_CATCH_UP_WINDOW_MS,
      slowAfterMs: null,
      maxCatchUp: 10,
      overlap: 'skip',
      spreadMs: null,
    });
    expect(policiesOf('j', { every: { minutes: 5 }, tz: 'UTC', dst: { fold: 'twice' }, missed: 'all', catchUpWindow: { hours: 2 }, maxCatchUp: 3, overlap: 'buffer-one', slowAfter: { minutes: 10 } }))
      .toEqual({ dst: { gap: 'shift', fold: 'twice' }, missed: 'all', catchUpWindowMs: 7_200_000, maxCatchUp: 3, overlap: 'buffer-one', slowAfterMs: 600_000, spreadMs: null });
  });

  it.each([
    [{ pattern: '0 0 * * *' }, /demo\.job.*schedule\.tz undefined is not an IANA timezone/],
    [{ pattern: '0 0 * * *', tz: 'Mars/Olympus' }, /schedule\.tz "Mars\/Olympus"/],
    [{ pattern: '61 0 * * *', tz: 'UTC' }, /schedule\.pattern "61 0 \* \* \*" is not a valid cron/],
    [{ tz: 'UTC' }, /needs a cron pattern or an every interval/],
    [{ pattern: '0 0 * * *', tz: 'UTC', dst: { gap: 'jump' } }, /schedule\.dst\.gap "jump" must be "shift" or "skip"/],
    [{ pattern: '0 0 * * *', tz: 'UTC', dst: { fold: 'both' } }, /schedule\.dst\.fold "both" must be "once" or "twice"/],
    [{ pattern: '0 9 * * *', tz: 'UTC', spread: { hours: 25 } }, /schedule\.spread \{"hours":25\} must be from 1 second to 24 hours/],
    [{ pattern: '0 9 * * *', tz: 'UTC', spread: { milliseconds: 500 } }, /schedule\.spread .* must be from 1 second to 24 hours/],
    [{ pattern: '0 9 * * *', tz: 'UTC', spread: 'ten minutes' }, /schedule\.spread "ten minutes" is not a positive duration/],
    [{ every: { minutes: 1 }, tz: 'UTC', missed: 'some' }, /schedule\.missed "some" must be "skip", "once" or "all"/],
    [{ pattern: '0 0 * * *', tz: 'UTC', catchUpWindow: { hours: -1 } }, /schedule\.catchUpWindow .* is not a positive duration/],
    [{ pattern: '0 0 * * *', tz: 'UTC', slowAfter: { minutes: 0 } }, /schedule\.slowAfter .* is not a positive duration; use e\.g\. \{ minutes: 10 \}/],
    [{ pattern: '0 0 * * *', tz: 'UTC', maxCatchUp: 0 }, /schedule\.maxCatchUp 0 must be an integer from 1 to 1000/],
    [{ pattern: '0 0 * * *', tz: 'UTC', maxCatchUp: 2.5 }, /schedule\.maxCatchUp 2\.5/],
  ])('rejects %j with a named error', (spec, message) => {
    expect(bad(spec)).toThrow(JobDefinitionError);
    expect(bad(spec)).toThrow(message);
  });
});
