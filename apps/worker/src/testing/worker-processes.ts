import { createLogger, QueueSet } from '@tickwork/core';
import { appEntry, freePort, startApp, startRedisServer, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';

/** A test file's private Redis and the real worker processes it starts (useWorkerProcesses). */
export interface WorkerProcesses {
  readonly server: RedisServerHandle;
  readonly redis: Redis;
  readonly queues: QueueSet;
  /** A worker process (apps/worker/dist/main.js) on the file's Redis with `jobsModule`'s catalog; `env` adds to or overrides the rest. Resolves once it is ready. */
  start(env?: Record<string, string>): Promise<AppProcess>;
  /** Any other process of the test's on the file's Redis (killed after each test as the workers are). */
  track(app: AppProcess): AppProcess;
}

/**
 * The set-up every test file of real worker processes repeats: a private redis-server for the file, emptied
 * before each test; the worker processes each test starts, killed (-9) after it.
 */
export function useWorkerProcesses(opts: { jobsModule: string; prefix?: string; env?: Record<string, string> }): WorkerProcesses {
  const prefix = opts.prefix ?? 'tickwork';
  let server: RedisServerHandle | undefined;
  let redis: Redis | undefined;
  let queues: QueueSet | undefined;
  let apps: AppProcess[] = [];
  beforeAll(async () => {
    server = await startRedisServer();
    redis = server.client();
    queues = new QueueSet(redis, prefix, createLogger('test', 'silent'));
  });
  afterAll(async () => {
    await queues?.close();
    await server?.stop();
  });
  beforeEach(async () => {
    await redis?.flushall();
  });
  afterEach(async () => {
    await Promise.all(apps.map((a) => a.stop('SIGKILL')));
    apps = [];
  });
  const ready = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`${what} is not up yet: use it inside a test or hook`);
    return v;
  };
  const track = (app: AppProcess) => (apps.push(app), app);
  return {
    get server() {
      return ready(server, 'the Redis server');
    },
    get redis() {
      return ready(redis, 'the Redis connection');
    },
    get queues() {
      return ready(queues, 'the queues');
    },
    track,
    async start(env = {}) {
      const app = track(
        startApp(appEntry('worker'), {
          REDIS_URL: ready(server, 'the Redis server').url,
          JOBS_MODULE: opts.jobsModule,
          PORT: String(await freePort()),
          LOG_LEVEL: 'info',
          ...opts.env,
          ...env,
        }),
      );
      await app.waitForLog((l) => l.msg === 'worker ready', 'worker ready');
      return app;
    },
  };
}
