import { createLiftAhead } from '@tickwork/bullmq-engine';
import { createAlerter, packageVersion, startMemorySampler, startProcessInfo } from '@tickwork/operations';
import { createHeadStart, createSchedulerRegistry, DEFAULT_STALE_AFTER_MS } from '@tickwork/schedules';
import { createLogger, createRedis, exitOnStartupError, openAppContext, metricsRoute, onShutdown, allReady, redisPingCheck, startHealthServer } from '@tickwork/core';
import { loadSchedulerEnv } from './env.js';
import { reconcileSchedules } from './reconcile.js';
import { createTicker } from './tick.js';
import { watchSchedules } from './watchdog.js';
import { watchIndexed } from './watchdog-index.js';
import { createCapacityWatch } from './capacity-watch.js';

const boot = createLogger('scheduler');
// Stacks in logs and dead letters name the TypeScript source (dist/ carries source maps).
process.setSourceMapsEnabled(true);

async function main(): Promise<void> {
  const env = loadSchedulerEnv(process.env);
  // Loading the catalog validates every schedule (pattern, timezone, policies, data): a bad one stops start-up here.
  const { log, catalog, redis, queues, target, outage, close } = await openAppContext('scheduler', env, async () => (await import('@tickwork/jobs')).catalog);
  if (env.SCHEDULE_SPEEDUP !== undefined) {
    log.warn({ everyMs: env.SCHEDULE_SPEEDUP }, 'SCHEDULE_SPEEDUP: every schedule runs on this interval (staging only)');
  }

  const reconcile = () => reconcileSchedules({ catalog, queues, redis, log, speedupMs: env.SCHEDULE_SPEEDUP });
  // The head start and batches only while every registered worker holds early occurrences and runs batches (head-start.ts).
  const headStart = createHeadStart({ redis, prefix: env.QUEUE_PREFIX, configuredMs: env.SCHEDULE_HEAD_START_MS, log, readBatches: env.SCHEDULE_BATCH_MAX > 1 });
  await headStart.refresh();
  headStart.start();
  // Adding ahead needs the engine's lift (a BullMQ internal): without it, occurrences are added at their time.
  const liftAhead = env.SCHEDULE_ADD_AHEAD_MS > env.SCHEDULE_LOOKAHEAD_MS ? createLiftAhead(queues, log) : undefined;
  const ticker = createTicker({
    queues,
    redis,
    catalog,
    log,
    graceMs: env.SCHEDULE_GRACE_MS,
    lookaheadMs: env.SCHEDULE_LOOKAHEAD_MS,
    headStartMs: headStart.current,
    batchMax: () => (headStart.batches() ? env.SCHEDULE_BATCH_MAX : 1),
    leaseMs: env.SCHEDULE_LEASE_MS,
    // A stall this long may have had this scheduler judged dead (the registry below) and its claims taken over.
    staleAfterMs: Math.min(DEFAULT_STALE_AFTER_MS, env.SCHEDULER_DEAD_AFTER_MS / 2),
    addAhead: liftAhead && { ms: env.SCHEDULE_ADD_AHEAD_MS, lift: liftAhead, queues: () => catalog.queues },
  });
  // The scheduler registry: a replica killed mid-way has its claims released as soon as it is found silent,
  // instead of holding them for SCHEDULE_LEASE_MS (dispatch/takeover.ts). A connection of its own, so a large
  // claim round never delays a beat.
  const registryRedis = createRedis(target, 'command');
  outage.watch(registryRedis);
  const registry = createSchedulerRegistry({
    redis: registryRedis,
    prefix: env.QUEUE_PREFIX,
    replica: ticker.replica,
    heartbeatMs: env.SCHEDULER_HEARTBEAT_MS,
    deadAfterMs: env.SCHEDULER_DEAD_AFTER_MS,
    leaseMs: env.SCHEDULE_LEASE_MS,
    log,
    outage,
  });
  await registry.start();
  // What the dashboard's Processes page and `tickwork processes` show of this process (host, pid, version).
  const info = startProcessInfo({
    redis,
    prefix: env.QUEUE_PREFIX,
    role: 'scheduler',
    tag: ticker.replica,
    version: packageVersion(new URL('../package.json', import.meta.url)),
    queues: catalog.queues,
    deadAfterMs: env.SCHEDULER_DEAD_AFTER_MS,
    log,
    outage,
  });
  await info.start();
  // The first tick right at start is the catch-up pass: overdue entries are the lowest due scores.
  // The tick in progress is awaited on shutdown: one stopped between its claim and its commit would leave
  // its claims to expire (SCHEDULE_LEASE_MS) before another replica re-plans them.
  let ticking: Promise<void> | undefined;
  let ticks = 0;
  // The backlog gauges read every shard: apart from the ticks, so a shard whose master does not answer
  // holds up the gauges, not the schedules (a tick ticks on without such a shard; see the dispatcher).
  let measuringBacklog: Promise<void> | undefined;
  const tickOnce = async () => {
    try {
      await ticker.tick();
    } catch (err) {
      log.error({ err }, 'schedule tick failed; will retry');
    }
    // The backlog gauges every ~5 s of ticks: cheap, but not worth a round trip every 250 ms.
    if (ticks++ % Math.max(1, Math.round(5000 / env.SCHEDULE_TICK_MS)) === 0) {
      measuringBacklog ??= ticker
        .measure()
        .catch((err: unknown) => log.warn({ err: { message: (err as Error).message } }, 'could not read the due backlog; will retry'))
        .finally(() => (measuringBacklog = undefined));
    }
  };
  const tick = async () => {
    if (ticking) return; // a slow tick (Redis hiccup) is not stacked
    ticking = tickOnce().finally(() => {
      ticking = undefined;
    });
    await ticking;
  };

  await reconcile();
  await tick();
  const tickTimer = setInterval(() => void tick(), env.SCHEDULE_TICK_MS);
  const reconcileTimer = setInterval(() => {
    reconcile().catch((err: unknown) => log.error({ err }, 'reconcile failed; will retry'));
  }, env.RECONCILE_INTERVAL_MS);

  const alerter = createAlerter({
    log,
    redis,
    prefix: env.QUEUE_PREFIX,
    ...(env.ALERT_WEBHOOK_URL && { webhook: { url: env.ALERT_WEBHOOK_URL, timeoutMs: env.ALERT_WEBHOOK_TIMEOUT_MS } }),
  });
  const watchDeps = { catalog, redis, prefix: env.QUEUE_PREFIX, log, alerter, speedupMs: env.SCHEDULE_SPEEDUP };
  let watching: Promise<void> | undefined;
  const watch = () => {
    // Catalog schedules: the full pass (few, with per-schedule gauges); runtime ones: their deadline indexes.
    watching ??= Promise.all([watchSchedules(watchDeps), watchIndexed(watchDeps).catch((err: unknown) => log.warn({ err: { message: (err as Error).message } }, 'indexed watchdog pass failed; will retry'))]).then(() => undefined).finally(() => {
      watching = undefined;
    });
  };
  watch(); // a schedule that went stale while no scheduler ran is reported at once
  const watchdogTimer = setInterval(watch, env.SCHEDULE_WATCHDOG_INTERVAL_MS);

  const capacity = createCapacityWatch({ redis, prefix: env.QUEUE_PREFIX, catalog, log, alerter, alertRatio: env.REDIS_MEMORY_ALERT_RATIO });
  let measuring: Promise<void> | undefined;
  const measure = () => {
    measuring ??= capacity
      .check()
      .catch((err: unknown) => log.warn({ err: { message: (err as Error).message } }, 'capacity check failed; will retry'))
      .finally(() => {
        measuring = undefined;
      });
  };
  measure();
  const capacityTimer = setInterval(measure, env.CAPACITY_CHECK_INTERVAL_MS);
  // The dashboard's Redis memory chart: the scheduler samples it, since it runs all the time (the dashboard
  // may not) and there are few of it (workers may be many); replicas' samples of a minute agree (the larger is kept).
  const memorySampler = env.CHART_HISTORY === 'on' ? startMemorySampler({ redis, prefix: env.QUEUE_PREFIX, log, outage }) : undefined;


  // Ready while Redis answers and the timers run; not once shutdown began (no tick starts after that).
  let stopping = false;
  const running = async () => (stopping ? { ok: false, detail: { scheduler: 'stopping' } } : { ok: true, detail: { scheduler: 'running' } });
  const health = await startHealthServer({ port: env.PORT, log, ready: allReady(redisPingCheck(redis), running), routes: metricsRoute, routesToken: env.METRICS_TOKEN });
  log.info({ port: env.PORT, catalogSchedules: catalog.scheduled().length, replica: ticker.replica }, 'scheduler ready');

  onShutdown(log, async () => {
    stopping = true;
    clearInterval(tickTimer);
    clearInterval(reconcileTimer);
    clearInterval(watchdogTimer);
    clearInterval(capacityTimer);
    memorySampler?.stop();
    headStart.stop();
    await ticking;
    await ticker.idle(); // occurrences held for their exact time (at most SCHEDULE_LOOKAHEAD_MS)
    // Every claim is committed: nothing left to take over, so no live scheduler needs to judge this one dead.
    await registry.stop(true);
    registryRedis.disconnect();
    await info.stop(true);
    await watching;
    await measuring;
    await alerter.settle(2000);
    health.close();
    await close();
  });
}

main().catch((err: unknown) => exitOnStartupError(boot, err));
