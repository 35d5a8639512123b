import { holdWritesOn, type Logger, type RedisClient } from '@tickwork/core';
import { Worker, type Job, type Processor, type WorkerOptions } from 'bullmq';
import { foldAcks } from './ack/ack-fold.js';
import type { BatchStore } from './batch/batch-store.js';
import { createFastBatchStore } from './batch/fast-batch-store.js';
import { createPublicBatchStore, type PublicBatchStoreOptions } from './batch/public-batch-store.js';
import { checkContract, installedVersion, type ContractEntry, type ContractMismatch } from './contract/check.js';
import { CONTRACT } from './contract/contract.js';
import { corkUntilTurnEnds, holdEveryCommand } from './cork.js';
import { noteMismatches, reportMismatch, setFastPath, useGuardLog } from './guard.js';
import { activeLockedBy, countStall, resetStallCount } from './stalls.js';
import { ackConnectionOf } from './worker/ack-connection.js';
import { DeliveredJob } from './worker/delivered-job.js';
import { trackFetchCalls } from './worker/fetch-calls.js';
import { TickworkWorker } from './worker/tickwork-worker.js';

/**
 * How the worker runs BullMQ: `fast`, through tickwork's fast paths (the short completion path, results
 * folded into acknowledgements, corked writes, the reaper's and the stall reset's Lua, sole deliveries, the
 * batch scripts); `public`, through BullMQ's public API and its own scripts only. Both keep every tickwork
 * guarantee (effects once, the DLQ, cancel); `public` is slower and leaves crash recovery to BullMQ's own
 * stalled check (tens of seconds rather than a few). docs/upgrading-bullmq.md.
 */
export type EngineMode = 'fast' | 'public';

/** What a worker's recovery needs of BullMQ's stall bookkeeping (stalls.ts): only on the fast path. */
export interface StallBook {
  countStall: typeof countStall;
  resetStallCount: typeof resetStallCount;
  activeLockedBy: typeof activeLockedBy;
}

/** The small interface the worker uses to run BullMQ (see EngineMode). */
export interface Engine {
  readonly mode: EngineMode;
  /** Why the engine runs on the public path: the contract entries the installed libraries do not match. */
  readonly mismatches: readonly ContractMismatch[];
  /** A BullMQ Worker for `queue`: tickwork's (fast) or BullMQ's own (public). */
  createWorker<D = unknown, R = unknown>(queue: string, processor: Processor<D, R>, opts: WorkerOptions): Worker<D, R>;
  /**
   * The connection a worker's jobs are acknowledged on, with results folded into its acknowledgements, for
   * the ledger to write each result there ahead of the acknowledgement (fast). Undefined on the public path:
   * results are then written and awaited before the processor returns.
   */
  readonly ackConnectionOf: ((worker: Worker | undefined) => Promise<RedisClient> | undefined) | undefined;
  /**
   * Lets `connection`'s writes of one event-loop turn leave together (the cork, cork.ts) on the fast path:
   * each acknowledgement connection (the worker's command connections hold every command instead:
   * holdEveryCommand). Nothing on the public path.
   */
  holdWrites(connection: RedisClient): void;
  /**
   * Holds every command of `connection` until the turn ends, not only those written ahead (cork.ts
   * holdEveryCommand): the worker's command connections, whose single commands many jobs send in one turn.
   * Nothing on the public path.
   */
  holdEveryCommand(connection: RedisClient): void;
  /** Whether the job's hash held no run record when BullMQ delivered it (the fast path notes it; public: never known, so false). */
  unrecordedAtDelivery(job: Job): boolean;
  /** BullMQ's stall bookkeeping for tickwork's reaper, lost-delivery check and stall reset; undefined on the public path. */
  readonly stalls: StallBook | undefined;
  /**
   * The store a batch job's queue is run through (batch/batch-store.ts): tickwork's batch scripts on
   * BullMQ's structures (fast), or BullMQ's public API with tickwork's own done records (public).
   */
  createBatchStore(o: PublicBatchStoreOptions): BatchStore;
}

export interface EngineOptions {
  log: Logger;
  /** WORKER_BULLMQ_FAST_PATH: 'auto' takes the fast path when the contract holds; 'off' never. */
  fastPath?: 'auto' | 'off';
  /** The contract to check (tests give another to see a mismatch handled); default CONTRACT. */
  contract?: readonly ContractEntry[];
}

/**
 * The engine for this process: the contract checked against the installed BullMQ and ioredis once (its
 * outcome logged once and set in the gauges), then every worker, connection and batch store made the
 * chosen way.
 */
export function createEngine(opts: EngineOptions): Engine {
  useGuardLog(opts.log);
  const mismatches = opts.fastPath === 'off' ? [] : checkContract(opts.contract ?? CONTRACT);
  const mode: EngineMode = opts.fastPath === 'off' || mismatches.length > 0 ? 'public' : 'fast';
  noteMismatches(mismatches);
  setFastPath(mode === 'fast');
  const versions = { bullmq: safeVersion('bullmq'), ioredis: safeVersion('ioredis') };
  if (mode === 'fast') opts.log.info(versions, "BullMQ engine: fast path (the installed BullMQ matches tickwork's contract)");
  else if (opts.fastPath === 'off') opts.log.info(versions, "BullMQ engine: BullMQ's public paths only (WORKER_BULLMQ_FAST_PATH=off)");
  else
    opts.log.warn(
      { ...versions, mismatches: mismatches.map((m) => `${m.name}: ${m.detail}`) },
      "BullMQ engine: the installed BullMQ does not match tickwork's contract; running on BullMQ's public paths only (every guarantee holds; throughput is lower and crash recovery is BullMQ's stalled check). See docs/upgrading-bullmq.md",
    );
  return mode === 'fast' ? fastEngine(mismatches) : publicEngine(mismatches);
}

function fastEngine(mismatches: readonly ContractMismatch[]): Engine {
  const folded = new WeakSet<RedisClient>();
  return {
    mode: 'fast',
    mismatches,
    createWorker: (queue, processor, opts) => trackFetchCalls(new TickworkWorker(queue, processor, opts)),
    ackConnectionOf(worker) {
      const connection = ackConnectionOf(worker);
      return connection?.then((redis) => {
        if (!folded.has(redis)) {
          folded.add(redis);
          holdWritesOn(redis, corkUntilTurnEnds);
          // Results in a job's hash ride in its acknowledgement (ack/ack-fold.ts); else they are written ahead.
          let detail: string | undefined;
          try {
            if (!foldAcks(redis)) detail = "the worker's connection lacks what folding results into acknowledgements needs";
          } catch (err) {
            detail = `the acknowledgements' script could not be built: ${err instanceof Error ? err.message : String(err)}`;
          }
          if (detail) reportMismatch({ name: "BullMQ's client runCommand", detail }, 'results are written ahead of their acknowledgements');
        }
        return redis;
      });
    },
    holdWrites: (connection) => holdWritesOn(connection, corkUntilTurnEnds),
    // Not also a hold for callers (holdWritesOn): their holdUntilTurnEnds would count each of their
    // commands twice against the cork's group of 16.
    holdEveryCommand,
    unrecordedAtDelivery: (job) => job instanceof DeliveredJob && job.unrecordedAtDelivery,
    stalls: { countStall, resetStallCount, activeLockedBy },
    createBatchStore: (o) => createFastBatchStore(o),
  };
}

function publicEngine(mismatches: readonly ContractMismatch[]): Engine {
  return {
    mode: 'public',
    mismatches,
    createWorker: (queue, processor, opts) => trackFetchCalls(new Worker(queue, processor, opts)),
    ackConnectionOf: undefined,
    holdWrites: () => undefined,
    holdEveryCommand: () => undefined,
    unrecordedAtDelivery: () => false,
    stalls: undefined,
    createBatchStore: (o) => createPublicBatchStore(o),
  };
}

function safeVersion(pkg: 'bullmq' | 'ioredis'): string {
  try {
    return installedVersion(pkg);
  } catch {
    return 'unknown';
  }
}
