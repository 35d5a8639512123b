/**
 * One timed drain of a pre-filled queue by one BullMQ Worker (bench/main.ts runs it per mode and round):
 * jobs/s, the CPU each job cost Node and Redis, and the Redis commands each job cost the worker process.
 */
import { type Engine } from '@tickwork/bullmq-engine';
import { ackBatchesSent } from '@tickwork/bullmq-engine/testing';
import { completionWriter } from '@tickwork/exactly-once';
import { createRedis, EVENTS_MAX_LEN, jobOptions, keyspaceOn, type AnyJob, type RedisClient } from '@tickwork/core';
import { ackConnectionOf } from '@tickwork/bullmq-engine/testing';
import { BatchRunner } from '@tickwork/worker';
import { pino } from 'pino';
import { Queue, Worker, type JobsOptions, type Processor, type WorkerOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { redisCpu } from './redis-cpu.js';

export const PREFIX = 'bench';
const silentLog = pino({ level: 'silent' });

/** A mode's processor, made for the Worker that runs it (the ledger writes ahead on that Worker's connection). */
export type ProcessorFor = (ack: () => Promise<RedisClient> | undefined) => Processor;

export interface Measured {
  rate: number;
  nodeUs: number;
  redisUs: number;
  /**
   * Requests to Redis per job, awaited or not: the commands this process sent (every connection: the
   * Worker's, the ledger's, the handler's), each ledger operation and each acknowledgement counted as one
   * even when it shared a batched script call with others (a job still waits for, or writes, its own).
   */
  commandsPerJob: number;
  completionsPerCall: number | undefined;
}

/**
 * Commands sent, counted where ioredis sends them (BullMQ's connections are ioredis too): awaited or not,
 * each is one request Redis answers. Pipelined commands count one each.
 */
let commandsSent = 0;
const send = Redis.prototype.sendCommand;
Redis.prototype.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
  commandsSent++;
  return send.apply(this, args);
} as Redis['sendCommand'];

/** How a mode's Worker is made and where its acknowledgements go (an engine's createWorker and ackConnectionOf, or BullMQ's own). */
export interface WorkerMaker {
  create(name: string, processor: Processor, opts: WorkerOptions): Worker;
  ackOf(worker: Worker): Promise<RedisClient> | undefined;
}

/** A stock BullMQ Worker, its acknowledgement connection as BullMQ has it. */
export const stockWorker: WorkerMaker = { create: (name, processor, opts) => new Worker(name, processor, opts), ackOf: (worker) => ackConnectionOf(worker) };

/** Pre-fills a fresh queue with `jobs` jobs named `name`, then times a worker draining it. */
export async function measure(
  url: string,
  queueName: string,
  name: string,
  processorFor: ProcessorFor,
  jobs: number,
  concurrency: number,
  ledgerSent: { batches: number; ops: number },
  /** How the mode's Worker is made, and its acknowledgement connection found: tickwork's modes as the worker app does (its engine). */
  maker: WorkerMaker = stockWorker,
): Promise<Measured> {
  const filled = await filledQueue(url, queueName, name, jobs, { removeOnComplete: true, removeOnFail: true });
  let done = 0;
  let failed = 0;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const windowEnd = await timedWindow(filled.producer);
  const ledger0 = ledgerSent.ops - ledgerSent.batches;
  const blocking = createRedis(url, 'blocking');
  const worker: Worker = maker.create(queueName, processorFor(() => maker.ackOf(worker)), { connection: blocking, prefix: PREFIX, concurrency });
  worker.on('completed', () => {
    if (++done === jobs) finish();
  });
  worker.on('failed', (job, err) => {
    if (failed++ < 5) process.stderr.write(`job ${job?.id} failed: ${err.message}\n`);
    if (++done === jobs) finish();
  });
  await finished;
  const window = await windowEnd(jobs);
  const unbatched = ledgerSent.ops - ledgerSent.batches - ledger0;
  const ack = await ackConnectionOf(worker);
  const written = ack ? completionWriter(ack).sent : undefined;
  // Acknowledgements sent a few to a script call (ack-fold.ts) count one request each, as a bare worker's do.
  const acked = ack ? ackBatchesSent(ack) : undefined;
  const completionsPerCall = written && written.batches > 0 ? written.ops / written.batches : undefined;
  const sent = window.sent + unbatched + (written ? written.ops - written.batches : 0) + (acked ? acked.acks - acked.calls : 0);
  await worker.close();
  blocking.disconnect();
  await filled.remove();
  if (failed > 0) throw new Error(`${failed} of ${jobs} bench jobs failed in ${queueName}`);
  return { rate: window.rate, nodeUs: window.nodeUs, redisUs: window.redisUs, commandsPerJob: sent / jobs, completionsPerCall };
}

/** A fresh queue holding `jobs` jobs named `name` (data `{ i }`), added on a producer connection of its own. */
async function filledQueue(url: string, queueName: string, name: string, jobs: number, opts: JobsOptions): Promise<{ producer: RedisClient; remove(): Promise<void> }> {
  const producer = createRedis(url, 'command');
  const queue = new Queue(queueName, { connection: producer, prefix: PREFIX });
  for (let i = 0; i < jobs; i += 1000) {
    const n = Math.min(1000, jobs - i);
    await queue.addBulk(Array.from({ length: n }, (_, k) => ({ name, data: { i: i + k }, opts })));
  }
  return {
    producer,
    async remove() {
      await queue.obliterate({ force: true });
      await queue.close();
      producer.disconnect();
    },
  };
}

/**
 * Opens a timed window; its end gives jobs/s, the Node and Redis CPU per job, and the commands this process
 * sent meanwhile (Redis's CPU read through `producer`, outside the worker's connections).
 */
async function timedWindow(producer: RedisClient): Promise<(jobs: number) => Promise<{ rate: number; nodeUs: number; redisUs: number; sent: number }>> {
  const rcpu0 = await redisCpu(producer);
  const started = performance.now();
  const cpu0 = process.cpuUsage();
  const sent0 = commandsSent;
  return async (jobs) => {
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const redisSeconds = (await redisCpu(producer)) - rcpu0;
    return { rate: jobs / seconds, nodeUs: (cpu.user + cpu.system) / jobs, redisUs: (redisSeconds * 1e6) / jobs, sent: commandsSent - sent0 };
  };
}


export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/**
 * One timed drain of a pre-filled queue of batch job `def` by the worker's BatchRunner (batch/), as the
 * worker app runs it: each job added as `enqueue` adds it (the job's options), validated, handled in
 * batches, completed with its queue's retention, counted in the job's metrics, failures to the DLQ.
 */
export async function measureBatch(url: string, queueName: string, def: AnyJob, jobs: number, engine: Engine): Promise<Measured> {
  const renamed = { ...def, queue: queueName };
  const filled = await filledQueue(url, queueName, def.name, jobs, jobOptions(def));
  let done = 0;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  // Connected before the timed window, as a worker app's connections are before its jobs arrive (and as
  // pg-boss's pool is, pgboss.ts); the runner itself starts inside it.
  const command = createRedis(url, 'command');
  const blocking = createRedis(url, 'blocking');
  await Promise.all([command.ping(), blocking.ping()]);
  // The batch store as `engine` makes it (the fast one on a matching BullMQ, else the public one), with the
  // connections, before the window, as the worker app makes it at its start.
  const store = engine.createBatchStore({ redis: command, blocking, keyspace: keyspaceOn(command, PREFIX, queueName), queue: queueName, def: renamed, maxEvents: EVENTS_MAX_LEN, leaseMs: 8000, maxStalledCount: 2 });
  const windowEnd = await timedWindow(filled.producer);
  let failures = 0;
  const runner = new BatchRunner({
    store,
    def: renamed,
    appRedis: command,
    enqueue: async () => {
      throw new Error('the bench jobs enqueue nothing');
    },
    log: silentLog,
    onFinalFailures: () => void failures++,
    onCompleted: (n) => {
      done += n;
      if (done === jobs) finish();
    },
  });
  runner.start();
  await finished;
  const window = await windowEnd(jobs);
  // Closes the store and its connections.
  await runner.close();
  await filled.remove();
  if (failures > 0) throw new Error(`bench batch jobs failed in ${queueName}`);
  return { rate: window.rate, nodeUs: window.nodeUs, redisUs: window.redisUs, commandsPerJob: window.sent / jobs, completionsPerCall: undefined };
}
