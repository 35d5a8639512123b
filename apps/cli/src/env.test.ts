/** The CLI's env schema: blank numbers and choices are their defaults. */
import { describe, expect, it } from 'vitest';
import { loadCliEnv } from './env.js';

describe('every number and choice of the CLI', () => {
  it('set blank (empty or spaces) is its default', () => {
    const defaults = loadCliEnv({});
    expect(defaults).toMatchObject({ LOG_LEVEL: 'warn', DASHBOARD_PORT: 3000 });
    for (const key of ['LOG_LEVEL', 'DASHBOARD_PORT', 'REDIS_CLUSTER_FAILOVER_MS']) for (const blank of ['', ' ']) expect(loadCliEnv({ [key]: blank }), key).toEqual(defaults);
  });
});
