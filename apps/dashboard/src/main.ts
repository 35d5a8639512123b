import {
  createLogger,
  createRedis,
  exitOnStartupError,
  loadCatalog,
  onShutdown,
  QueueSet,
} from '@tickwork/runtime';
import { createDashboardApp } from './app.js';
import { loadDashboardEnv } from './env.js';

const boot = createLogger('dashboard');

async function main(): Promise<void> {
  const env = loadDashboardEnv(process.env);
  const log = createLogger('dashboard', env.LOG_LEVEL);
  const catalog = await loadCatalog(env.JOBS_MODULE, async () => (await import('@tickwork/jobs')).catalog);
  const redis = createRedis(env.REDIS_URL, 'command');
  redis.on('error', (err) => log.warn({ err: { message: err.message } }, 'redis connection error'));
  const queues = new QueueSet(redis, env.QUEUE_PREFIX, log);
  const app = await createDashboardApp({ catalog, queues, redis, log, user: env.DASHBOARD_USER, password: env.DASHBOARD_PASSWORD });
  const server = app.listen(env.PORT);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  // The user name is fine to log; the password never is.
  log.info({ port: env.PORT, user: env.DASHBOARD_USER }, 'dashboard ready');

  onShutdown(log, async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await queues.close();
    redis.disconnect();
  });
}

main().catch((err: unknown) => exitOnStartupError(boot, err));
