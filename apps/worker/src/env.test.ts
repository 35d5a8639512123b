/** The worker's env schema: blank numbers are their defaults, WORKER_MAX_STALLED_COUNT included. */
import { describe, expect, it } from 'vitest';
import { loadWorkerEnv } from './env.js';

describe('every number and choice of the worker', () => {
  it('set blank (empty or spaces) is its default, never 0', () => {
    const defaults = loadWorkerEnv({});
    const blankable = Object.keys(defaults).filter((k) => typeof defaults[k as keyof typeof defaults] === 'number' || k === 'LOG_LEVEL' || k === 'WORKER_BULLMQ_FAST_PATH');
    expect(blankable).toEqual(expect.arrayContaining(['WORKER_MAX_STALLED_COUNT', 'WORKER_CONCURRENCY', 'PORT', 'WORKER_BULLMQ_FAST_PATH']));
    for (const key of blankable) for (const blank of ['', ' ']) expect(loadWorkerEnv({ [key]: blank }), `${key}=${JSON.stringify(blank)}`).toEqual(defaults);
    expect(defaults.WORKER_MAX_STALLED_COUNT).toBe(2);
  });

  it('WORKER_MAX_STALLED_COUNT takes 0 or more, written as digits', () => {
    expect(loadWorkerEnv({ WORKER_MAX_STALLED_COUNT: '0' }).WORKER_MAX_STALLED_COUNT).toBe(0);
    for (const bad of ['-1', '1.5', '2e1', 'two']) {
      expect(() => loadWorkerEnv({ WORKER_MAX_STALLED_COUNT: bad }), bad).toThrow(/WORKER_MAX_STALLED_COUNT is invalid: must be a whole number, 0 or more/);
    }
    expect(() => loadWorkerEnv({ WORKER_BULLMQ_FAST_PATH: 'on' })).toThrow(/WORKER_BULLMQ_FAST_PATH is invalid: must be one of auto, off/);
  });
});

describe("the charts' history", () => {
  it('is on by default, flushed every 5 s, and only on or off', () => {
    expect(loadWorkerEnv({})).toMatchObject({ CHART_HISTORY: 'on', CHART_HISTORY_FLUSH_MS: 5000 });
    expect(loadWorkerEnv({ CHART_HISTORY: 'off', CHART_HISTORY_FLUSH_MS: '200' })).toMatchObject({ CHART_HISTORY: 'off', CHART_HISTORY_FLUSH_MS: 200 });
    expect(() => loadWorkerEnv({ CHART_HISTORY: 'yes' })).toThrow(/CHART_HISTORY is invalid: must be one of on, off/);
    expect(() => loadWorkerEnv({ CHART_HISTORY_FLUSH_MS: '0' })).toThrow(/CHART_HISTORY_FLUSH_MS is invalid/);
  });
});
