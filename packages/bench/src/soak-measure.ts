/** What `pnpm bench:soak` reads off Redis and the worker (soak.ts, soak-keyed.ts). */
import { classifyKey, type Component } from '@tickwork/operations';
import type { Redis } from 'ioredis';

export type Components = Map<Component, { keys: number; bytes: number }>;

export async function usedMemory(redis: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1] ?? 0);
}

/** Runs the worker completed so far (its `tickwork_jobs_completed_total`; BullMQ trims its completed set). */
export async function completedCount(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(/^tickwork_jobs_completed_total\{[^}]*\} (\d+)/gm)) sum += Number(m[1]);
  return sum;
}

/** Every key sized with MEMORY USAGE, by component (a full scan: this is a bench, not production). */
export async function componentsNow(redis: Redis): Promise<Components> {
  const totals: Components = new Map();
  for await (const keys of redis.scanStream({ count: 1000 }) as AsyncIterable<string[]>) {
    const sizes = await memoryUsage(redis, keys);
    keys.forEach((key, i) => {
      // Measured once the backlog drained: every job left is a finished one.
      const k = classifyKey(key, 'tickwork');
      const c: Component = 'component' in k ? k.component : 'jobs-finished';
      const t = totals.get(c) ?? { keys: 0, bytes: 0 };
      t.keys++;
      t.bytes += sizes[i] ?? 0;
      totals.set(c, t);
    });
  }
  return totals;
}

/** MEMORY USAGE of each key (all of a small value, no sampling), in one pipeline. */
export async function memoryUsage(redis: Redis, keys: readonly string[]): Promise<number[]> {
  const pipeline = redis.pipeline();
  for (const key of keys) pipeline.memory('USAGE', key, 'SAMPLES', '0');
  return ((await pipeline.exec()) ?? []).map(([, size]) => Number(size ?? 0));
}

/** Keys matching `pattern` (SCAN). */
export async function keysMatching(redis: Redis, pattern: string): Promise<string[]> {
  const found: string[] = [];
  for await (const keys of redis.scanStream({ match: pattern, count: 1000 }) as AsyncIterable<string[]>) found.push(...keys);
  return found;
}

export const keptBytes = (c: Components): number => [...c.values()].reduce((a, b) => a + b.bytes, 0);
export const mib = (bytes: number): string => `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
export const out = (s: string): void => void process.stdout.write(s);
