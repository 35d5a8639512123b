import { metricsRegistry } from '@tickwork/core';
import { Gauge } from 'prom-client';

/**
 * BullMQ Workers found attached to a batch job's queue that no tickwork batch runner owns, at the runner's
 * last look (BatchStore.foreignConsumers, about once a minute). Should be 0: a batch job's queue is its
 * runner's alone; another consumer (a stock BullMQ Worker, an old tickwork) runs jobs the batches should.
 */
export const batchForeignConsumers = new Gauge({
  name: 'tickwork_batch_foreign_consumers',
  help: "BullMQ Workers attached to a batch job's queue that are not tickwork batch runners (at the last check, about once a minute); should be 0",
  labelNames: ['queue'] as const,
  registers: [metricsRegistry],
});
