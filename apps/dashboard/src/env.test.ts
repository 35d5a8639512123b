/** The dashboard's env schema besides its users (env-users.test.ts): blank numbers and choices are their defaults. */
import { describe, expect, it } from 'vitest';
import { loadDashboardEnv } from './env.js';

describe('every number and choice of the dashboard', () => {
  it('set blank (empty or spaces) is its default, never 0', () => {
    const base = { DASHBOARD_PASSWORD: 'long-enough' };
    const defaults = loadDashboardEnv(base);
    expect(defaults).toMatchObject({ PORT: 3000, LOG_LEVEL: 'info', REDIS_STARTUP_TIMEOUT_MS: 10_000 });
    for (const key of ['PORT', 'LOG_LEVEL', 'REDIS_STARTUP_TIMEOUT_MS', 'REDIS_CLUSTER_FAILOVER_MS']) {
      for (const blank of ['', '  ']) expect(loadDashboardEnv({ ...base, [key]: blank }), key).toEqual(defaults);
    }
  });
});
