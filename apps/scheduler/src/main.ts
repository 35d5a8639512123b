import {
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
import { loadSchedulerEnv } from './env.js';
import { reconcileSchedules } from './reconcile.js';

const boot = createLogger('scheduler');

async function main(): Promise<void> {
  const env = loadSchedulerEnv(process.env);
  const log = createLogger('scheduler', env.LOG_LEVEL);
  // Loading the catalog validates every schedule (pattern, timezone, data): a bad one stops start-up here.
  const catalog = await loadCatalog(env.JOBS_MODULE, async () => (await import('@tickwork/jobs')).catalog);
  const redis = createRedis(env.REDIS_URL, 'command');
  redis.on('error', (err) => log.warn({ err: { message: err.message } }, 'redis connection error'));
  const queues = new QueueSet(redis, env.QUEUE_PREFIX, log);

  const reconcile = () => reconcileSchedules({ catalog, queues, redis, log });
  await reconcile();
  const timer = setInterval(() => {
    reconcile().catch((err: unknown) => log.error({ err }, 'reconcile failed; will retry'));
  }, env.RECONCILE_INTERVAL_MS);

  const health = await startHealthServer({ port: env.PORT, log, check: redisPingCheck(redis), routes: metricsRoute });
  log.info({ port: env.PORT, schedules: catalog.scheduled().length }, 'scheduler ready');

  onShutdown(log, async () => {
    clearInterval(timer);
    health.close();
    await queues.close();
    redis.disconnect();
  });
}

main().catch((err: unknown) => exitOnStartupError(boot, err));
