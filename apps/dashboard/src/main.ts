import { createLogger, exitOnStartupError, listen, openAppContext, onShutdown } from '@tickwork/core';
import { createServer } from 'node:http';
import { createDashboardApp } from './app.js';
import { dashboardUsers, loadDashboardEnv } from './env.js';

const boot = createLogger('dashboard');
// Stacks in logs and dead letters name the TypeScript source (dist/ carries source maps).
process.setSourceMapsEnabled(true);

async function main(): Promise<void> {
  const env = loadDashboardEnv(process.env);
  const { log, catalog, redis, queues, close } = await openAppContext('dashboard', env, async () => (await import('@tickwork/jobs')).catalog);
  const users = dashboardUsers(env);
  const app = await createDashboardApp({ catalog, queues, redis, log, users, trustedProxies: env.DASHBOARD_TRUSTED_PROXIES ?? [] });
  const server = createServer(app);
  await listen(server, env.PORT);
  // User names and roles are fine to log; passwords and hashes never are.
  log.info({ port: env.PORT, users: users.map((u) => `${u.name} (${u.role})`), trustedProxies: env.DASHBOARD_TRUSTED_PROXIES ?? [] }, 'dashboard ready');

  onShutdown(log, async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await close();
  });
}

main().catch((err: unknown) => exitOnStartupError(boot, err));
