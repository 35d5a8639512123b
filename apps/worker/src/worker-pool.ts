import { createExactlyOnce, startLedgerCompactor } from '@tickwork/exactly-once';
import { QueueSet, bullmqTelemetry, createRedis, keyspaceOn, type AnyJob, type HealthCheck, type RedisOutageLog, type RedisClient, type RedisTarget } from '@tickwork/core';
import { isCancellationReason } from '@tickwork/operations';
import type { Worker } from 'bullmq';
import { startCancelListener, type CancelListener } from './cancel-listener.js';
import type { DeadLetterRouting } from './dead-letter.js';
import { createProcessor } from './processor.js';
import type { ProcessorDeps } from './pipeline/deps.js';
import { createRecovery } from './recovery/recovery.js';
import { RunningJobs } from './running-jobs.js';
import { RedisRestartedError } from './errors.js';
import { watchRedisRestarts } from './redis-restarts.js';
import { soleDeliveryCheck } from './recovery/sole-delivery.js';
import { bullmqStallProgress, ownStallProgress, PUBLIC_PATH_MAX_STALLED } from './stall-progress.js';
import { closeWorker, consumerState, createEngine, isJobDecodeError, renewWorkerConnections, type Engine } from '@tickwork/bullmq-engine';
import { startConsumerWatchdog, type ConsumerWatchdog } from './consumer-watchdog.js';
import { createUnreadableJobs, type UnreadableJobs } from './unreadable-jobs.js';
import { BatchRunner } from './batch/batch-runner.js';
import { openBatchStore } from './batch/open-batch-store.js';

export interface WorkerPoolOptions extends Omit<ProcessorDeps, 'redis' | 'exactlyOnce' | 'cancels'> {
  /** Where Redis is (REDIS_URL or the cluster), for the connections this opens. */
  redisTarget: RedisTarget;
  /** Command connection shared with the processor (ledger, demo side effects). */
  redis: RedisClient;
  prefix: string;
  concurrency: number;
  queues?: readonly string[];
  /** Moves final failures to the DLQ (dead-letter.ts). */
  deadLetter?: DeadLetterRouting;
  /** The app's Redis outage log (app-context.ts); without it every connection error is logged. */
  outage?: RedisOutageLog;
  /** Lock/stall tuning; tests shorten them to see stalls quickly. */
  /** Also the idempotency-ledger lease. */
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  maxStalledCount?: number;
  /** How long a completed run with an explicit key suppresses duplicates (jobs may set their own). Default 24 hours. */
  idempotencyWindowMs?: number;
  /** How long an unfinished run's record and step results are kept. Default 7 days. */
  unfinishedRunTtlMs?: number;
  /** How long a done run with its own key keeps its full record before it is compacted. Default 5 minutes. */
  fullRecordMs?: number;
  /** Recovery after a crash (recovery/): how often this process beats, and the silence after which a process counts as dead. */
  heartbeatMs?: number;
  deadAfterMs?: number;
  /** How long a batch job's batch holds its lease unrenewed (renewed every quarter of it). Default 8 s. */
  batchLeaseMs?: number;
  /** How BullMQ is run (@tickwork/bullmq-engine); made from `fastPath` (WORKER_BULLMQ_FAST_PATH) when not given. */
  engine?: Engine;
  fastPath?: 'auto' | 'off';
  /** WORKER_WATCHDOG_MS (consumer-watchdog.ts): how long a consumer with free slots may leave jobs untaken; 0 or unset: no watchdog (the app passes its env's, 3 s by default). */
  watchdogMs?: number;
}

export interface WorkerPool {
  workers: readonly Worker[];
  /**
   * Stops taking new jobs and waits for active ones up to `deadlineMs`; past it, aborts their signals and
   * force-closes. Aborted jobs are not lost: BullMQ's stalled check redelivers them to another worker.
   */
  drain(deadlineMs: number): Promise<{ timedOut: boolean }>;
  /** Aborts every active job's signal at once (no waiting: for a stop while Redis is unreachable). */
  abort(reason: string): void;
  /** Ready while every BullMQ worker runs and no drain has begun (a draining worker takes no new jobs). */
  readiness: HealthCheck;
  /**
   * This process's tag in the worker registry, logged when its workers start: the ledger's record of a run
   * it holds names the holder `<tag>.<delivery>`, so a record read from Redis tells which process holds the run.
   */
  processTag: string;
  /** Jobs running now (batch queues' batches not counted), for the process record (process-info.ts in @tickwork/operations). */
  busy(): number;
}

/** One BullMQ Worker per queue, each with its own blocking connection (BullMQ requires that). */
export function startWorkerPool(opts: WorkerPoolOptions): WorkerPool {
  // Fast paths when the installed BullMQ matches the engine's contract, else BullMQ's public paths (engine.ts).
  const engine = opts.engine ?? createEngine({ log: opts.log, ...(opts.fastPath && { fastPath: opts.fastPath }) });
  // The ledger gets its own command connection, so its claims never queue behind demo/job traffic.
  // Auto-pipelining was measured (`pnpm bench`) to cost more Node CPU per job than it saved: off.
  const ledgerRedis = createRedis(opts.redisTarget, 'command');
  if (opts.outage) opts.outage.watch(ledgerRedis);
  else ledgerRedis.on('error', (err) => opts.log.warn({ err: { message: err.message } }, 'ledger redis connection error'));
  // Its commands of one turn (claims, results written ahead, Redis steps, overlap entries and exits) leave
  // together on the engine's fast path, and so do the process's command connection's (schedule history).
  engine.holdEveryCommand(ledgerRedis);
  engine.holdEveryCommand(opts.redis);
  // BullMQ's lock, also the ledger's lease and the bound of a sole delivery (sole-delivery.ts).
  const lockDurationMs = opts.lockDurationMs ?? 30_000;
  const maxStalled = opts.maxStalledCount ?? 2;
  // Aborts reach running jobs through this, not BullMQ's cancelJob (processor.ts says why).
  const running = new RunningJobs();
  // A Redis that restarted may have lost acknowledged step records: the runs in progress then run again from
  // the ledger (redis-restarts.ts). Checked as a connection comes back, never per job.
  const restarts = watchRedisRestarts({ connections: [ledgerRedis, opts.redis], log: opts.log, handBack: () => running.abortAll(new RedisRestartedError()) });
  // Recovery: a per-process heartbeat; a dead process's jobs and runs are taken over (recovery/recovery.ts).
  const recovery = createRecovery({
    redisTarget: opts.redisTarget,
    prefix: opts.prefix,
    heartbeatMs: opts.heartbeatMs,
    deadAfterMs: opts.deadAfterMs,
    leaseMs: lockDurationMs,
    maxStalledCount: opts.maxStalledCount ?? 2,
    stalls: engine.stalls,
    isRunning: (queue, jobId) => running.has(queue, jobId),
    log: opts.log,
    outage: opts.outage,
  });
  const exactlyOnce = createExactlyOnce(ledgerRedis, {
    prefix: opts.prefix,
    liveness: recovery.registry,
    leaseMs: lockDurationMs,
    ...(opts.idempotencyWindowMs !== undefined && { windowMs: opts.idempotencyWindowMs }),
    ...(opts.unfinishedRunTtlMs !== undefined && { unfinishedTtlMs: opts.unfinishedRunTtlMs }),
    ...(opts.fullRecordMs !== undefined && { fullRecordMs: opts.fullRecordMs }),
  });
  // The sweeper of this process's queues' done records (ledger/compactor.ts): here, beside the runs that
  // make them, so every deployment that runs jobs compacts them; several workers share the stages.
  const compactor = startLedgerCompactor({ ledger: exactlyOnce.ledger, queues: opts.queues ?? opts.catalog.queues, log: opts.log });
  const byQueue = new Map<string, Worker>();
  // One subscriber connection for the process: a cancel request aborts the job wherever it runs.
  const cancels = startCancelListener({
    redisTarget: opts.redisTarget,
    redis: ledgerRedis,
    prefix: opts.prefix,
    log: opts.log,
    outage: opts.outage,
    cancelRunning: (queue, jobId, reason) => running.cancel(queue, jobId, reason),
  });
  // On BullMQ's public paths no delivery is known to be sole, results are awaited, stalls are BullMQ's to count.
  const soleDelivery = engine.mode === 'fast' ? soleDeliveryCheck({ lockDurationMs, recovery, unrecordedAtDelivery: engine.unrecordedAtDelivery }) : undefined;
  const ackOf = engine.ackConnectionOf;
  const processor = createProcessor({
    ...opts,
    // Where a batch of occurrences hands one on as a job of its own (pipeline/occurrence-batch.ts).
    queueSet: opts.queueSet ?? new QueueSet(opts.redis, opts.prefix, opts.log),
    exactlyOnce,
    cancels,
    running,
    ...(soleDelivery && { soleDelivery }),
    ...(ackOf && { ackConnectionOf: (queue: string) => ackOf(byQueue.get(queue)) }),
    stallProgress: engine.stalls ? bullmqStallProgress(opts.redis, engine.stalls) : ownStallProgress(opts.redis, opts.prefix, maxStalled),
    maxStalledCount: maxStalled,
  });
  // Jobs whose stored data or options are not JSON: failed for good when first delivered, to the DLQ (unreadable-jobs.ts).
  const unreadable = createUnreadableJobs({
    redis: opts.redis,
    prefix: opts.prefix,
    log: opts.log,
    deadLetter: opts.deadLetter,
    isRunning: (queue, jobId) => running.has(queue, jobId),
    stalls: engine.stalls,
  });
  // A batch job's queue is run by a BatchRunner of its own (batch/), every other queue by a BullMQ Worker.
  const batchRunners: ReturnType<typeof startBatchRunner>[] = [];
  const queues: string[] = [];
  for (const queue of opts.queues ?? opts.catalog.queues) {
    const def = opts.catalog.batchJobOf(queue);
    if (def) batchRunners.push(startBatchRunner(opts, engine, queue, def, cancels, unreadable));
    else queues.push(queue);
  }
  const telemetry = bullmqTelemetry();
  const workers = queues.map((queue) => {
    const connection = createRedis(opts.redisTarget, 'blocking');
    opts.outage?.watch(connection);
    // The engine's Worker: tickwork's on the fast path (sole deliveries noted, a short completion path), else BullMQ's own.
    const worker: Worker = engine.createWorker(queue, processor, {
      connection,
      prefix: keyspaceOn(connection, opts.prefix, queue).bullPrefix,
      concurrency: opts.concurrency,
      // A crashed worker's jobs are redelivered after the lock expires; handlers are idempotent. On BullMQ's
      // public paths tickwork holds jobs to the limit itself, forgiving stalls followed by progress (stall-progress.ts).
      maxStalledCount: engine.stalls ? maxStalled : PUBLIC_PATH_MAX_STALLED,
      ...(opts.lockDurationMs !== undefined && { lockDuration: opts.lockDurationMs }),
      ...(opts.stalledIntervalMs !== undefined && { stalledInterval: opts.stalledIntervalMs }),
      ...limiterOf(opts.catalog.rateLimitOf(queue)),
      // Traces on: BullMQ's process span per job, the parent of tickwork's (processor.ts); BullMQ's own
      // processJob and completion then run (the engine's short path has no telemetry wrapper).
      ...(telemetry && { telemetry }),
    });
    byQueue.set(queue, worker);
    recovery.track(worker, queue, connection);
    opts.deadLetter?.attach(worker);
    // Connection errors during an outage are the outage log's (once, then a summary), not one line each.
    worker.on('error', (err) => {
      // Maybe BullMQ could not decode a job it delivered: the check fails such jobs for good and logs each.
      if (isJobDecodeError(err)) unreadable.check(queue, worker);
      if (err instanceof SyntaxError) opts.log.warn({ queue, err: { message: err.message } }, 'a job delivered to this worker could not be decoded; failing the jobs that cannot be read');
      else if (!opts.outage?.note(err)) opts.log.error({ err, queue }, 'worker error');
    });
    worker.on('failed', (job, err) => {
      // A cancellation is logged by the processor (who, why) and is not a failure to look into.
      if (isCancellationReason(err.message)) return;
      opts.log.warn({ queue, job: job?.name, jobId: job?.id, attempt: job?.attemptsMade, err }, 'job attempt failed');
    });
    return worker;
  });
  recovery.start();
  const watchdogMs = opts.watchdogMs ?? 0;
  const watchdog = watchdogMs > 0 ? watchConsumers(opts, queues, workers, running, watchdogMs, engine.mode === 'fast') : undefined;
  opts.log.info({ queues, batchQueues: batchRunners.map((r) => r.queue), concurrency: opts.concurrency, processTag: recovery.registry.tag, watchdogMs }, 'workers started');

  let stopping = false;
  return {
    workers,
    processTag: recovery.registry.tag,
    busy: () => running.size,
    async readiness() {
      if (stopping) return { ok: false, detail: { workers: 'draining' } };
      const stopped = [...queues.filter((_, i) => !workers[i]?.isRunning()), ...batchRunners.filter((r) => !r.runner.isRunning).map((r) => r.queue)];
      return stopped.length === 0 ? { ok: true, detail: { workers: 'running' } } : { ok: false, detail: { workers: 'not running', queues: stopped } };
    },
    abort(reason) {
      stopping = true;
      running.draining = true;
      restarts.stop();
      watchdog?.stop();
      cancels.close();
      void compactor.stop();
      running.cancelAll(reason);
      for (const r of batchRunners) r.runner.abort(reason);
    },
    async drain(deadlineMs) {
      stopping = true;
      running.draining = true;
      restarts.stop();
      watchdog?.stop();
      cancels.close();
      await compactor.stop();
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), deadlineMs);
      });
      // Each Worker's wait for a job ends at once, on a cluster too (closeWorker says why); its running jobs are awaited.
      const closing = Promise.all([...workers.map((w) => closeWorker(w)), ...batchRunners.map((r) => r.close())]).then(() => 'closed' as const);
      const outcome = await Promise.race([closing, deadline]);
      clearTimeout(timer);
      if (outcome === 'timeout') {
        opts.log.warn({ deadlineMs }, 'drain deadline passed; aborting active jobs');
        running.cancelAll('worker shutting down');
        await Promise.all([...workers.map((w) => w.close(true)), ...batchRunners.map((r) => r.close(true))]);
        // Jobs left locked by the forced close are taken back once this process counts as dead.
        await recovery.stop(false);
        await unreadable.close();
        await opts.deadLetter?.close();
        ledgerRedis.disconnect();
        return { timedOut: true };
      }
      await recovery.stop(true);
      await unreadable.close();
      await opts.deadLetter?.close();
      ledgerRedis.disconnect();
      return { timedOut: false };
    },
  };
}


/**
 * The runner of batch job `def`'s queue, on a store with connections of its own (batch/open-batch-store.ts):
 * the fast store, or on the engine's public paths (`mode`, the engine's) the public one.
 */
function startBatchRunner(
  opts: WorkerPoolOptions,
  engine: Engine,
  queue: string,
  def: AnyJob,
  cancels: CancelListener,
  unreadable: UnreadableJobs,
): { queue: string; runner: BatchRunner; close(force?: boolean): Promise<void> } {
  opts.deadLetter?.watch(queue);
  const store = openBatchStore({
    engine,
    redisTarget: opts.redisTarget,
    prefix: opts.prefix,
    queue,
    def,
    leaseMs: opts.batchLeaseMs ?? 8000,
    maxStalledCount: opts.maxStalledCount ?? 2,
    ...(opts.stalledIntervalMs !== undefined && { stalledIntervalMs: opts.stalledIntervalMs }),
    log: opts.log,
    ...(opts.outage && { outage: opts.outage }),
    onUnreadable: (jobs) => unreadable.failed(queue, jobs),
  });
  const runner = new BatchRunner({
    store,
    timeline: opts.timeline?.queue(queue),
    def,
    appRedis: opts.redis,
    enqueue: opts.enqueue,
    log: opts.log,
    onFinalFailures: () => void opts.deadLetter?.sweep().catch(() => undefined),
    cancels,
    ...(opts.outage && { outage: opts.outage }),
  });
  runner.start();
  // The runner closes its store (and the store its connections).
  return { queue, runner, close: (force) => runner.close(force) };
}

/** The consumer watchdog (consumer-watchdog.ts) over the pool's BullMQ Workers, on a connection of its own. */
function watchConsumers(opts: WorkerPoolOptions, queues: readonly string[], workers: readonly Worker[], running: RunningJobs, afterMs: number, wake: boolean): ConsumerWatchdog {
  const redis = createRedis(opts.redisTarget, 'command');
  if (opts.outage) opts.outage.watch(redis);
  else redis.on('error', () => undefined);
  return startConsumerWatchdog({
    consumers: queues.map((queue, i) => ({ queue, worker: workers[i] as Worker })),
    redis,
    prefix: opts.prefix,
    concurrency: opts.concurrency,
    running: (queue) => running.jobsOf(queue),
    afterMs,
    // The wake-up marker is BullMQ's key: written on the fast path only (the contract holds).
    heal: (worker) => renewWorkerConnections(worker, { wake }),
    stateOf: consumerState,
    log: opts.log,
  });
}

/** BullMQ's limiter for a queue whose jobs set a rate limit (catalog.rateLimitOf). */
function limiterOf(limit: { max: number; durationMs: number } | undefined): { limiter?: { max: number; duration: number } } {
  return limit ? { limiter: { max: limit.max, duration: limit.durationMs } } : {};
}
