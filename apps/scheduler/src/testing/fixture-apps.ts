import { join } from 'node:path';
import { appEntry, freePort, REPO_ROOT, startApp, type AppProcess } from '@tickwork/testkit';
import type { RedisClient } from '@tickwork/runtime';
import { FX_RUNS_KEY } from './fixture-catalog.js';

/**
 * Real scheduler and worker processes on the fixture catalog, for the process tests: fast ticks, no
 * lookahead and a short grace, so missed occurrences show within seconds.
 */
const FIXTURE = join(REPO_ROOT, 'apps', 'scheduler', 'dist', 'testing', 'fixture-catalog.js');

export interface FixtureApps {
  /** Starts `app` against `redis` with the fixture settings, `extra` on top. */
  start(app: 'scheduler' | 'worker', extra?: Record<string, string>): Promise<AppProcess>;
  /** Kills whatever is still running (afterAll). */
  killAll(): Promise<void>;
}

/** `redis`: a REDIS_URL, or the variables that point an app at a Redis Cluster (testkit TestRedis `env`). */
export function fixtureApps(redis: () => string | Record<string, string>, prefix: string): FixtureApps {
  const started: AppProcess[] = [];
  return {
    async start(app, extra = {}) {
      const where = redis();
      const proc = startApp(appEntry(app), {
        ...(typeof where === 'string' ? { REDIS_URL: where } : where),
        QUEUE_PREFIX: prefix,
        JOBS_MODULE: FIXTURE,
        PORT: String(await freePort()),
        LOG_LEVEL: 'info',
        SCHEDULE_TICK_MS: '200',
        SCHEDULE_LOOKAHEAD_MS: '0',
        SCHEDULE_GRACE_MS: '1500',
        ...extra,
      });
      started.push(proc);
      return proc;
    },
    async killAll() {
      await Promise.all(started.map((a) => a.stop('SIGKILL')));
    },
  };
}

export function waitReady(app: AppProcess, what: string): Promise<Record<string, unknown>> {
  return app.waitForLog((l) => l.msg === 'scheduler ready' || l.msg === 'worker ready', what, 30_000);
}

/** One run of fx.second, as its handler records it. */
export interface FxRun {
  key: string;
  catchUp: boolean;
  nominal: string;
}

export async function readRuns(redis: RedisClient): Promise<FxRun[]> {
  return (await redis.lrange(FX_RUNS_KEY, 0, -1)).map((r) => JSON.parse(r) as FxRun);
}
