import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { dlqName, knownQueues, type Catalog, type Logger, type QueueSet } from '@tickwork/runtime';
import express, { type Express } from 'express';
import type { Redis } from 'ioredis';
import { basicAuth } from './basic-auth.js';

export interface DashboardDeps {
  catalog: Catalog;
  queues: QueueSet;
  redis: Redis;
  log: Logger;
  user: string;
  password: string;
}

/** Origin queues (catalog and any seen before) and their dead-letter queues, sorted for a stable board. */
export async function boardQueueNames(deps: Pick<DashboardDeps, 'catalog' | 'queues' | 'redis'>): Promise<string[]> {
  const origins = new Set([...deps.catalog.queues, ...(await knownQueues(deps.redis, deps.queues.prefix))]);
  return [...origins].sort().flatMap((q) => [q, dlqName(q)]);
}

/**
 * `GET /healthz` is the only open route; Bull Board (which can retry and delete jobs) and every other
 * path sit behind HTTP Basic auth.
 */
export async function createDashboardApp(deps: DashboardDeps): Promise<Express> {
  const app = express();
  app.disable('x-powered-by');

  app.get('/healthz', async (_req, res) => {
    try {
      await deps.redis.ping();
      res.json({ status: 'ok' });
    } catch (err) {
      res.status(503).json({ status: 'unhealthy', redis: (err as Error).message });
    }
  });

  app.use(basicAuth(deps.user, deps.password));

  const serverAdapter = new ExpressAdapter().setBasePath('/queues');
  createBullBoard({
    queues: (await boardQueueNames(deps)).map(
      // Dead letters are re-driven with `tickwork dlq redrive`, which keeps their idempotency key; a
      // plain Bull Board retry would not, so it is turned off on DLQs.
      (name) =>
        new BullMQAdapter(deps.queues.get(name), name.endsWith('.dlq') ? { allowRetries: false, description: 'dead letters' } : {}),
    ),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'tickwork' } },
  });
  app.use('/queues', serverAdapter.getRouter() as express.Router);
  app.get('/', (_req, res) => res.redirect('/queues'));

  app.use((_req, res) => res.status(404).json({ error: 'not found' }));
  return app;
}
