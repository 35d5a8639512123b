import { capacityReport, type CapacitySource } from '@tickwork/operations';
import { Router } from 'express';
import { renderCapacity } from '../pages/capacity.js';
import { sendPage } from './respond.js';

/** `GET /capacity` and `GET /api/capacity` (the same report as JSON). Each request samples afresh: milliseconds. */
export function capacityRouter(src: CapacitySource): Router {
  const router = Router();
  router.get('/capacity', async (_req, res) => {
    sendPage(res, renderCapacity(await capacityReport(src)));
  });
  router.get('/api/capacity', async (_req, res) => {
    res.json(await capacityReport(src));
  });
  return router;
}
