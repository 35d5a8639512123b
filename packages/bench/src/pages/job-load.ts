/**
 * The job load of `pnpm bench:schedule-pages` (issue 39): while the dashboard's pages are timed, jobs flow at a
 * steady rate through the stock worker, as they would on a busy deployment. The worker is the real process
 * (`apps/worker`, started as the other benches start it) loading ./catalog.ts, serving the `email` queue
 * only, with the charts' history on (its default), so it writes the queue's timeline every
 * CHART_HISTORY_FLUSH_MS while the chart pages read it. The producer runs in the bench process: no-op jobs
 * added with the catalog's own job options (tickwork's retention of finished jobs), in small addBulk batches
 * on a timer paced by the clock.
 *
 * The achieved rate is what the worker completed during the timed window, read from its own
 * `tickwork_jobs_completed_total` (its /metrics), not what was added: added jobs a worker cannot keep up with
 * pile up as waiting jobs, which is no load on the pages' reads of the history.
 */
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { addOptions, createLogger, createRedis, QueueSet } from '@tickwork/core';
import { waitFor } from '@tickwork/testkit';
import type { Queue } from 'bullmq';
import { msUntilOk, sleep, startChild, type Child } from '../schedules/harness.js';
import { pagesNoop } from './catalog.js';

/** The catalog module the worker (and the dashboard) load. */
export const PAGES_JOBS_MODULE = fileURLToPath(new URL('./catalog.js', import.meta.url));
export const LOAD_QUEUE = pagesNoop.queue;

/**
 * The producer's timer. Each tick adds what the clock says is due since the start, less what was added, so
 * a late timer or a slow addBulk is made up at the next tick and the rate does not drift; at 1,000 jobs/s a
 * tick adds about 20 jobs, a batch small enough that Redis (which runs an addBulk's MULTI as a whole) keeps
 * no page's read waiting for long (lane.ts measured about 100 ms for 5,000 at once).
 */
const TICK_MS = 20;
/** The largest addBulk, when a tick has fallen behind. */
const MAX_BATCH = 200;

/** Below this share of the asked rate the worker did not carry the load, and the page figures do not count. */
export const RATE_SHARE = 0.9;

export interface LoadFigures {
  asked: number;
  seconds: number;
  addedPerS: number;
  completedPerS: number;
  /** Jobs of the load waiting when the window closed (a worker falling behind leaves them growing). */
  waitingAtEnd: number;
}

export interface JobLoad {
  /** Runs `during` with the load flowing and returns its result and the load over exactly that time. */
  measure<T>(during: () => Promise<T>): Promise<{ result: T; load: LoadFigures }>;
  stop(): Promise<void>;
}

/** Handler runs of the load's job the worker has completed, from its Prometheus counter. */
async function completedRuns(worker: Child): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${worker.port}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('tickwork_jobs_completed_total{') && line.includes(`job="${pagesNoop.name}"`)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** Adds `rate` no-op jobs a second to `queue` until stopped. */
function startProducer(queue: Queue, rate: number): { added: () => number; stop: () => Promise<void> } {
  const opts = addOptions(pagesNoop, {});
  let running = true;
  let added = 0;
  const started = performance.now();
  const loop = (async () => {
    while (running) {
      const due = Math.floor((rate * (performance.now() - started)) / 1000);
      while (running && added < due) {
        const n = Math.min(MAX_BATCH, due - added);
        await queue.addBulk(Array.from({ length: n }, () => ({ name: pagesNoop.name, data: {}, opts })));
        added += n;
      }
      // To the next tick of the clock since the start, not TICK_MS from now: the time the adds took is not lost.
      const now = performance.now() - started;
      await sleep(Math.ceil((now + 1) / TICK_MS) * TICK_MS - now);
    }
  })();
  return {
    added: () => added,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/**
 * Starts the worker and the producer against `redisUrl` (prefix `tw`), and returns once the worker has
 * completed `warmS` seconds' worth of jobs at the asked rate (its consumers, connections and first history
 * flush are then behind it), or after 60 s: a worker that cannot keep up shows in the window's figures.
 */
export async function startJobLoad(redisUrl: string, rate: number, opts: { concurrency: number; warmS: number }): Promise<JobLoad> {
  const worker = await startChild('worker', {
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: 'tw',
    JOBS_MODULE: PAGES_JOBS_MODULE,
    WORKER_QUEUES: LOAD_QUEUE,
    WORKER_CONCURRENCY: String(opts.concurrency),
  });
  const command = createRedis(redisUrl, 'command');
  const queues = new QueueSet(command, 'tw', createLogger('bench', 'silent'));
  let producer: ReturnType<typeof startProducer> | undefined;
  const stop = async () => {
    await producer?.stop();
    await worker.stop();
    await queues.close();
    command.disconnect();
  };
  try {
    await msUntilOk(worker, '/readyz', 120_000);
    const queue = queues.get(LOAD_QUEUE);
    producer = startProducer(queue, rate);
    await waitFor(async () => (await completedRuns(worker)) >= rate * opts.warmS, { timeoutMs: 60_000, intervalMs: 250, what: 'the warm-up' }).catch(() => undefined);
    const running = producer;
    return {
      stop,
      async measure(during) {
        const [done0, added0, t0] = [await completedRuns(worker), running.added(), performance.now()];
        const result = await during();
        const [done1, added1, t1] = [await completedRuns(worker), running.added(), performance.now()];
        const seconds = (t1 - t0) / 1000;
        const waitingAtEnd = await queue.getWaitingCount();
        return { result, load: { asked: rate, seconds, addedPerS: (added1 - added0) / seconds, completedPerS: (done1 - done0) / seconds, waitingAtEnd } };
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Whether the worker carried the asked load (RATE_SHARE of it or more). */
export function rateReached(load: LoadFigures): boolean {
  return load.completedPerS >= RATE_SHARE * load.asked;
}

/** The load's line(s) for the output, beside the page figures. */
export function loadLines(load: LoadFigures, concurrency: number): string {
  let s =
    `job load: asked ${load.asked} jobs/s (${pagesNoop.name} on queue ${LOAD_QUEUE}, the stock worker at concurrency ${concurrency}, charts' history on); ` +
    `during the page timing (${load.seconds.toFixed(1)} s) ${load.addedPerS.toFixed(0)} added/s, ${load.completedPerS.toFixed(0)} completed/s by the worker, ${load.waitingAtEnd} waiting at the end\n`;
  if (!rateReached(load)) {
    s += `job load: the worker completed under ${RATE_SHARE * 100}% of the asked ${load.asked} jobs/s: the figures above were not taken at that rate and do not count for it\n`;
  }
  return s;
}
