import {
  createEnqueue,
  createLogger,
  createRedis,
  exitOnStartupError,
  loadCatalog,
  metricsRoute,
  onShutdown,
  QueueSet,
  redisPingCheck,
  startHealthServer,
} from '@tickwork/runtime';
import { loadWorkerEnv } from './env.js';
import { startWorkerPool } from './worker-pool.js';

const boot = createLogger('worker');

async function main(): Promise<void> {
  const env = loadWorkerEnv(process.env);
  const log = createLogger('worker', env.LOG_LEVEL);
  const catalog = await loadCatalog(env.JOBS_MODULE, async () => (await import('@tickwork/jobs')).catalog);
  const redis = createRedis(env.REDIS_URL, 'command');
  redis.on('error', (err) => log.warn({ err: { message: err.message } }, 'redis connection error'));
  const queues = new QueueSet(redis, env.QUEUE_PREFIX, log);
  const enqueue = createEnqueue(catalog, queues);
  const selected = env.WORKER_QUEUES?.split(',').map((q) => q.trim()).filter(Boolean);
  const pool = startWorkerPool({
    catalog,
    redis,
    enqueue,
    log,
    redisUrl: env.REDIS_URL,
    prefix: env.QUEUE_PREFIX,
    concurrency: env.WORKER_CONCURRENCY,
    lockDurationMs: env.WORKER_LOCK_DURATION_MS,
    stalledIntervalMs: env.WORKER_STALLED_INTERVAL_MS,
    idempotencyRetentionMs: env.IDEMPOTENCY_RETENTION_HOURS * 3600_000,
    ...(selected && { queues: selected }),
  });
  const health = await startHealthServer({ port: env.PORT, log, check: redisPingCheck(redis), routes: metricsRoute });
  log.info({ port: env.PORT, jobs: catalog.jobs.length }, 'worker ready');

  onShutdown(log, async () => {
    const { timedOut } = await pool.drain(env.DRAIN_TIMEOUT_MS);
    log.info({ timedOut }, 'workers drained');
    health.close();
    await queues.close();
    redis.disconnect();
  });
}

main().catch((err: unknown) => exitOnStartupError(boot, err));
