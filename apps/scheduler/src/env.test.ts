import { effectiveRule } from '@tickwork/schedules';
import { EnvError } from '@tickwork/core';
import { describe, expect, it } from 'vitest';
import { loadSchedulerEnv } from './env.js';
import { fxSecond } from './testing/fixture-catalog.js';
import { nextOccurrences } from '@tickwork/schedules';

describe('SCHEDULE_SPEEDUP', () => {
  it('parses every=10s into an interval every schedule then fires on', () => {
    const env = loadSchedulerEnv({ SCHEDULE_SPEEDUP: 'every=10s' });
    expect(env.SCHEDULE_SPEEDUP).toBe(10_000);
    const next = nextOccurrences(effectiveRule(fxSecond, env.SCHEDULE_SPEEDUP), new Date('2026-01-01T00:00:03Z'), 2);
    expect(next.map((o) => o.at.toISOString())).toEqual(['2026-01-01T00:00:10.000Z', '2026-01-01T00:00:20.000Z']);
    expect(loadSchedulerEnv({ SCHEDULE_SPEEDUP: 'every=2m' }).SCHEDULE_SPEEDUP).toBe(120_000);
    expect(loadSchedulerEnv({}).SCHEDULE_SPEEDUP).toBeUndefined();
  });

  it('is refused when NODE_ENV=production, naming the variable', () => {
    const load = () => loadSchedulerEnv({ SCHEDULE_SPEEDUP: 'every=10s', NODE_ENV: 'production' });
    expect(load).toThrow(EnvError);
    expect(load).toThrow(/SCHEDULE_SPEEDUP is invalid: is refused when NODE_ENV=production/);
  });

  it('rejects a malformed or too short interval with what is expected', () => {
    expect(() => loadSchedulerEnv({ SCHEDULE_SPEEDUP: 'fast' })).toThrow(/SCHEDULE_SPEEDUP is invalid: expected every=<number><ms\|s\|m>, e.g. every=10s/);
    expect(() => loadSchedulerEnv({ SCHEDULE_SPEEDUP: 'every=10ms' })).toThrow(/at least 1s/);
  });
});

describe('watchdog and alert settings', () => {
  it('reject a bad interval or webhook URL, naming the variable and what is expected', () => {
    expect(() => loadSchedulerEnv({ SCHEDULE_WATCHDOG_INTERVAL_MS: '0' })).toThrow(/SCHEDULE_WATCHDOG_INTERVAL_MS is invalid/);
    expect(() => loadSchedulerEnv({ ALERT_WEBHOOK_URL: 'ftp://hooks.example.com/x' })).toThrow(/ALERT_WEBHOOK_URL is invalid: must be an http\(s\) URL/);
    expect(loadSchedulerEnv({}).SCHEDULE_WATCHDOG_INTERVAL_MS).toBe(30_000);
  });
});

describe('capacity settings', () => {
  it('take a memory alert ratio between 0.1 and 0.99 (default 0.8) and a check interval (default 30 s)', () => {
    expect(loadSchedulerEnv({})).toMatchObject({ REDIS_MEMORY_ALERT_RATIO: 0.8, CAPACITY_CHECK_INTERVAL_MS: 30_000 });
    expect(loadSchedulerEnv({ REDIS_MEMORY_ALERT_RATIO: '0.9' }).REDIS_MEMORY_ALERT_RATIO).toBe(0.9);
    for (const bad of ['80', '0', 'high', '1']) {
      expect(() => loadSchedulerEnv({ REDIS_MEMORY_ALERT_RATIO: bad })).toThrow(/REDIS_MEMORY_ALERT_RATIO is invalid: must be a ratio between 0.1 and 0.99, e.g. 0.8/);
    }
    expect(() => loadSchedulerEnv({ CAPACITY_CHECK_INTERVAL_MS: '-5' })).toThrow(/CAPACITY_CHECK_INTERVAL_MS is invalid/);
  });
});

describe('SCHEDULE_HEAD_START_MS', () => {
  it('takes 0 to 1000 ms (default 50) and refuses anything else, saying what is expected', () => {
    expect(loadSchedulerEnv({}).SCHEDULE_HEAD_START_MS).toBe(50);
    expect(loadSchedulerEnv({ SCHEDULE_HEAD_START_MS: '0' }).SCHEDULE_HEAD_START_MS).toBe(0);
    expect(loadSchedulerEnv({ SCHEDULE_HEAD_START_MS: '1000' }).SCHEDULE_HEAD_START_MS).toBe(1000);
    expect(() => loadSchedulerEnv({ SCHEDULE_HEAD_START_MS: '1001' })).toThrow(/SCHEDULE_HEAD_START_MS is invalid: must be at most 1000 ms: a worker holds an early occurrence at most that long/);
    for (const bad of ['-1', '2.5', 'soon']) {
      expect(() => loadSchedulerEnv({ SCHEDULE_HEAD_START_MS: bad })).toThrow(/SCHEDULE_HEAD_START_MS is invalid: must be a whole number of ms from 0 to 1000/);
    }
  });
});

describe('SCHEDULER_HEARTBEAT_MS and SCHEDULER_DEAD_AFTER_MS', () => {
  it('default to 1 s and 3 s, and refuse a dead-after shorter than 3 heartbeats, saying why', () => {
    expect(loadSchedulerEnv({})).toMatchObject({ SCHEDULER_HEARTBEAT_MS: 1000, SCHEDULER_DEAD_AFTER_MS: 3000 });
    expect(loadSchedulerEnv({ SCHEDULER_HEARTBEAT_MS: '500', SCHEDULER_DEAD_AFTER_MS: '1500' })).toMatchObject({ SCHEDULER_HEARTBEAT_MS: 500, SCHEDULER_DEAD_AFTER_MS: 1500 });
    expect(() => loadSchedulerEnv({ SCHEDULER_DEAD_AFTER_MS: '2000' })).toThrow(/SCHEDULER_DEAD_AFTER_MS is invalid: must be at least 3 times SCHEDULER_HEARTBEAT_MS \(3000\): a late beat must not look like a death/);
    expect(() => loadSchedulerEnv({ SCHEDULER_HEARTBEAT_MS: '0' })).toThrow(/SCHEDULER_HEARTBEAT_MS is invalid/);
  });
});

describe('every number and choice of the scheduler', () => {
  it('set blank (empty or spaces) is its default, never 0', () => {
    const defaults = loadSchedulerEnv({});
    const blankable = Object.keys(defaults).filter((k) => typeof defaults[k as keyof typeof defaults] === 'number' || k === 'LOG_LEVEL');
    expect(blankable).toEqual(expect.arrayContaining(['SCHEDULE_LOOKAHEAD_MS', 'SCHEDULE_HEAD_START_MS', 'REDIS_MEMORY_ALERT_RATIO', 'PORT', 'LOG_LEVEL']));
    for (const key of blankable) for (const blank of ['', '  ']) expect(loadSchedulerEnv({ [key]: blank }), `${key}=${JSON.stringify(blank)}`).toEqual(defaults);
    expect(loadSchedulerEnv({ SCHEDULE_LOOKAHEAD_MS: '0' }).SCHEDULE_LOOKAHEAD_MS).toBe(0);
    expect(() => loadSchedulerEnv({ SCHEDULE_LOOKAHEAD_MS: '-5' })).toThrow(/SCHEDULE_LOOKAHEAD_MS is invalid: must be a whole number of ms, 0 or more/);
  });
});

describe("the charts' Redis memory samples", () => {
  it('are on by default, and only on or off', () => {
    expect(loadSchedulerEnv({}).CHART_HISTORY).toBe('on');
    expect(loadSchedulerEnv({ CHART_HISTORY: 'off' }).CHART_HISTORY).toBe('off');
    expect(() => loadSchedulerEnv({ CHART_HISTORY: 'no' })).toThrow(/CHART_HISTORY is invalid: must be one of on, off/);
  });
});
