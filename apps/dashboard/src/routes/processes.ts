import { listProcesses } from '@tickwork/operations';
import type { RedisClient } from '@tickwork/core';
import { Router } from 'express';
import { renderProcesses } from '../pages/processes.js';
import { sendPage } from './respond.js';

/** `GET /processes` and `GET /api/processes` (the same listing as JSON): a few reads per process, no scan. */
export function processesRouter(src: { redis: RedisClient; prefix: string }): Router {
  const router = Router();
  router.get('/processes', async (_req, res) => {
    sendPage(res, renderProcesses(await listProcesses(src.redis, src.prefix)));
  });
  router.get('/api/processes', async (_req, res) => {
    res.json(await listProcesses(src.redis, src.prefix));
  });
  return router;
}
