import { join } from 'node:path';
import { appEntry, freePort, redisEnvOf, REPO_ROOT, startApp, type AppProcess, type RedisClusterHandle } from '@tickwork/testkit';
import type { RedisClient } from '@tickwork/core';
import { FX_RUNS_KEY } from './fixture-catalog.js';

/**
 * Real scheduler and worker processes on the fixture catalog, for the process tests: fast ticks, no
 * lookahead and a short grace, so missed occurrences show within seconds.
 */
const FIXTURE = join(REPO_ROOT, 'apps', 'scheduler', 'dist', 'testing', 'fixture-catalog.js');

export interface FixtureApps {
  /** Starts `app` against `redis` (a URL, or a cluster: redisEnvOf) with the fixture settings, `extra` on top. */
  start(app: 'scheduler' | 'worker', extra?: Record<string, string>): Promise<AppProcess>;
  /** Kills whatever is still running (afterAll). */
  killAll(): Promise<void>;
}

export function fixtureApps(redis: () => string | Pick<RedisClusterHandle, 'env'>, prefix: string): FixtureApps {
  const started: AppProcess[] = [];
  return {
    async start(app, extra = {}) {
      const proc = startApp(appEntry(app), {
        ...redisEnvOf(redis()),
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
