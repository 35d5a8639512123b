import { Counter } from 'prom-client';
import { metricsRegistry } from '@tickwork/core';

export const deadLettered = new Counter({
  name: 'tickwork_dead_lettered_total',
  help: 'Jobs moved to a dead-letter queue after their final failure',
  labelNames: ['queue', 'job'] as const,
  registers: [metricsRegistry],
});

export const alertsEmitted = new Counter({
  name: 'tickwork_alerts_total',
  help: 'Alerts emitted, by type (dead_letter, escalation, schedule_*, redis_memory_*)',
  labelNames: ['type'] as const,
  registers: [metricsRegistry],
});

export const webhookDeliveries = new Counter({
  name: 'tickwork_alert_webhook_deliveries_total',
  help: 'Alert webhook outcomes: delivered, failed (after retries) or dropped (too many in flight)',
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});
