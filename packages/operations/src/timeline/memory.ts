import { readMemoryInfo, runScript, type Logger, type RedisClient, type RedisMemoryInfo } from '@tickwork/core';
import { MEMORY_LAYOUT, MINUTE_MS } from './layout.js';
import { TIMELINE_WRITE, writeCall } from './store.js';

/**
 * Redis memory over time for the dashboard: used_memory (INFO memory; on a cluster the master nearest its
 * maxmemory, as readMemoryInfo reports it) sampled once a minute into a timeline (per minute for 24 hours,
 * per hour for 30 days, the largest sample of each; a fixed size). The scheduler samples it: it runs all
 * the time (the dashboard may not run when nobody looks), and there are a few of it at most (workers may be
 * many). Replicas sampling the same minute keep the larger sample, so several agree.
 */
export function memoryTimelineKey(prefix: string): string {
  return `${prefix}:meta:timeline:redis-memory`;
}

export const MEMORY_SAMPLE_MS = MINUTE_MS;

/** Reads INFO memory once and writes it into the minute and hour of `now`. */
export async function sampleMemory(redis: RedisClient, prefix: string, now = Date.now()): Promise<RedisMemoryInfo> {
  const info = await readMemoryInfo(redis);
  const call = writeCall(memoryTimelineKey(prefix), MEMORY_LAYOUT, [{ at: now, values: [0, Math.ceil(info.usedBytes / 1024), Math.ceil(info.maxBytes / 1024)] }]);
  await runScript(redis, TIMELINE_WRITE, call.keys, call.argv);
  return info;
}

export interface MemorySampler {
  stop(): void;
}

/** Samples now, then every `everyMs` (default a minute). Never throws: a failed sample is logged (once per failing streak). */
export function startMemorySampler(opts: { redis: RedisClient; prefix: string; log: Logger; everyMs?: number; outage?: { readonly down: boolean } | undefined }): MemorySampler {
  let failing = false;
  const sample = () =>
    sampleMemory(opts.redis, opts.prefix).then(
      () => {
        failing = false;
      },
      (err: Error) => {
        if (!failing && !opts.outage?.down) opts.log.warn({ err: { message: err.message } }, 'could not sample Redis memory for the charts; will retry');
        failing = true;
      },
    );
  void sample();
  const timer = setInterval(() => void sample(), opts.everyMs ?? MEMORY_SAMPLE_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
