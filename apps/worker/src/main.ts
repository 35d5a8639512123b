import { createAlerter, packageVersion, startProcessInfo, TimelineWriter } from '@tickwork/operations';
import { createEnqueue, createLogger, exitOnStartupError, openAppContext, metricsRoute, onShutdown, allReady, redisPingCheck, redisAnswersWithin, safeUrl, startHealthServer } from '@tickwork/core';
import { createPgPool, startOutboxRelay, startStepPruner } from '@tickwork/exactly-once';
import { loadWorkerEnv, selectedQueues } from './env.js';
import { createDeadLetterRouting } from './dead-letter.js';
import { startWorkerPool } from './worker-pool.js';

const boot = createLogger('worker');
// Stacks in logs and dead letters name the TypeScript source (dist/ carries source maps).
process.setSourceMapsEnabled(true);

async function main(): Promise<void> {
  const env = loadWorkerEnv(process.env);
  const { log, catalog, redis, queues, target, outage, close } = await openAppContext('worker', env, async () => (await import('@tickwork/jobs')).catalog);
  const selected = selectedQueues(env, catalog);
  const enqueue = createEnqueue(catalog, queues, { maxPayloadBytes: env.MAX_PAYLOAD_BYTES });
  const alerter = createAlerter({
    log,
    redis,
    prefix: env.QUEUE_PREFIX,
    escalateAfter: env.ALERT_ESCALATE_AFTER,
    ...(env.ALERT_WEBHOOK_URL && { webhook: { url: env.ALERT_WEBHOOK_URL, timeoutMs: env.ALERT_WEBHOOK_TIMEOUT_MS } }),
  });
  // The charts' history: counted in memory per queue and catalog schedule, written every few seconds.
  const timeline = env.CHART_HISTORY === 'on' ? new TimelineWriter({ redis, prefix: env.QUEUE_PREFIX, log, flushMs: env.CHART_HISTORY_FLUSH_MS, outage }) : undefined;
  timeline?.start();
  const deadLetter = createDeadLetterRouting({ queues, redis, catalog, log, outage, alerter, sweepIntervalMs: env.DLQ_SWEEP_INTERVAL_MS, timeline });
  const pool = startWorkerPool({
    catalog,
    redis,
    enqueue,
    queueSet: queues,
    log,
    redisTarget: target,
    prefix: env.QUEUE_PREFIX,
    concurrency: env.WORKER_CONCURRENCY,
    deadLetter,
    lockDurationMs: env.WORKER_LOCK_DURATION_MS,
    stalledIntervalMs: env.WORKER_STALLED_INTERVAL_MS,
    maxStalledCount: env.WORKER_MAX_STALLED_COUNT,
    heartbeatMs: env.WORKER_HEARTBEAT_MS,
    deadAfterMs: env.WORKER_DEAD_AFTER_MS,
    watchdogMs: env.WORKER_WATCHDOG_MS,
    batchLeaseMs: env.WORKER_BATCH_LEASE_MS,
    fastPath: env.WORKER_BULLMQ_FAST_PATH,
    idempotencyWindowMs: env.IDEMPOTENCY_RETENTION_HOURS * 3600_000,
    fullRecordMs: env.IDEMPOTENCY_FULL_RECORD_SECONDS * 1000,
    unfinishedRunTtlMs: env.IDEMPOTENCY_UNFINISHED_RETENTION_HOURS * 3600_000,
    graceMs: env.SCHEDULE_GRACE_MS,
    queues: selected,
    outage,
    ...(timeline && { timeline }),
  });
  // The transactional-enqueue relay: every worker given the database runs one; they share the rows.
  const outboxPool = env.OUTBOX_DATABASE_URL ? createPgPool(env.OUTBOX_DATABASE_URL, log) : undefined;
  const relay =
    outboxPool &&
    startOutboxRelay({ pool: outboxPool, queues, catalog, log, intervalMs: env.OUTBOX_RELAY_INTERVAL_MS, maxPayloadBytes: env.MAX_PAYLOAD_BYTES });
  if (relay) log.info({ database: safeUrl(env.OUTBOX_DATABASE_URL ?? '') }, 'outbox relay started');
  // The same database holds tickwork_steps (pgStep): its rows go once no run can be resumed from them, the
  // unfinished-run retention after they were recorded (pg/prune.ts).
  const pruner = outboxPool && startStepPruner({ pool: outboxPool, log, olderThanMs: env.IDEMPOTENCY_UNFINISHED_RETENTION_HOURS * 3600_000 });
  // What the dashboard's Processes page and `tickwork processes` show of this process (host, pid, busy slots).
  const info = startProcessInfo({
    redis,
    prefix: env.QUEUE_PREFIX,
    role: 'worker',
    tag: pool.processTag,
    version: packageVersion(new URL('../package.json', import.meta.url)),
    queues: selected,
    concurrency: env.WORKER_CONCURRENCY,
    busy: pool.busy,
    deadAfterMs: env.WORKER_DEAD_AFTER_MS,
    log,
    outage,
  });
  await info.start();
  const health = await startHealthServer({ port: env.PORT, log, ready: allReady(redisPingCheck(redis), pool.readiness), routes: metricsRoute, routesToken: env.METRICS_TOKEN });
  log.info({ port: env.PORT, jobs: catalog.jobs.length }, 'worker ready');

  onShutdown(log, async () => {
    if (outage.down && !(await redisAnswersWithin(redis, 1000))) {
      // Nothing can be acknowledged without Redis: waiting out the drain deadline would only delay the
      // stop. Active jobs are aborted; BullMQ's stall check hands them to a worker once Redis is back.
      // (Asked, not only read off the outage log: an error can be noted with no reconnect to end it.)
      log.warn('redis unreachable: stopping without draining');
      pool.abort('worker shutting down during a Redis outage');
      await info.stop(false);
      return;
    }
    await relay?.stop();
    await pruner?.stop();
    await outboxPool?.end();
    const { timedOut } = await pool.drain(env.DRAIN_TIMEOUT_MS);
    log.info({ timedOut }, 'workers drained');
    // The counts since the last flush, the drained jobs' and dead letters' included.
    await timeline?.stop();
    // A forced stop leaves jobs for others to take back once this process counts as dead: not a clean stop.
    await info.stop(!timedOut);
    await alerter.settle(2000);
    health.close();
    await close();
  }, env.DRAIN_TIMEOUT_MS + 10_000);
}

main().catch((err: unknown) => exitOnStartupError(boot, err));
