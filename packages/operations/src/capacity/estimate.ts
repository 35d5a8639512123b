import type { RedisClient } from '@tickwork/core';
import { dlqName } from '@tickwork/core';
import { pipelineBySlot, type SlotCommand } from '@tickwork/core';
import { queueKeyspace, queueStructureKey } from '@tickwork/core';
import { keyNodes } from '@tickwork/core';
import { scheduleKeys, scheduleRegistryKey } from '@tickwork/schedules';
import { SCHEDULE_SHARDS, shardKeys } from '@tickwork/schedules';
import { queueRegistryKey } from '@tickwork/core';
import { classifyKey, COMPONENTS, jobComponent, QUEUE_STRUCTURE_NAMES, type Component } from './classify.js';

export const DEFAULT_CAPACITY_SAMPLES = 2000;
/** MEMORY USAGE looks at this many elements of a collection and extrapolates (Redis's own default). */
const USAGE_SAMPLES = 5;

export interface ComponentEstimate {
  component: Component;
  /** Estimated bytes (MEMORY USAGE: value, key name and Redis's per-key overhead). */
  bytes: number;
  /** Estimated number of keys. */
  keys: number;
}

export interface CapacityEstimate {
  /** DBSIZE: exact. */
  dbKeys: number;
  /**
   * Keys drawn with RANDOMKEY and measured; their shares are extrapolated to the other keys. When Redis holds
   * no more keys than the samples asked for, every key is measured once instead (`allKeys`).
   */
  sampledKeys: number;
  /** Every key was measured (Redis held at most the samples asked for): the figures are not extrapolated. */
  allKeys: boolean;
  /** Large per-queue and per-schedule keys measured one by one instead of sampled (exact up to MEMORY USAGE's own sampling). */
  measuredKeys: number;
  /** Sum over components. */
  totalBytes: number;
  components: ComponentEstimate[];
}

export interface EstimateOptions {
  prefix: string;
  /** Origin queues; their DLQs are included. */
  queues: readonly string[];
  schedules: readonly string[];
  samples?: number;
  /** The cluster layout of the queues' keys (redis/keyspace.ts); set from the client by estimateComponents. */
  clustered?: boolean;
}

/**
 * The few keys that are large and known by name (a queue's completed set, its event stream, a schedule's
 * history): a random sample of a million keys would almost never draw one, so they are measured directly,
 * and only the many small keys (job hashes, ledger records) are sampled. Stratified, the estimate of the
 * whole stays unbiased and its error is that of the small keys only.
 */
function knownLargeKeys(opts: EstimateOptions): string[] {
  const keys = new Set([scheduleRegistryKey(opts.prefix), queueRegistryKey(opts.prefix)]);
  for (const queue of opts.queues) {
    const ks = queueKeyspace(opts.prefix, queue, opts.clustered ?? false);
    for (const name of [queue, dlqName(queue)]) for (const s of QUEUE_STRUCTURE_NAMES) keys.add(queueStructureKey(ks, name, s));
  }
  for (const schedule of opts.schedules) for (const key of Object.values(scheduleKeys(opts.prefix, schedule))) keys.add(key);
  // The store's per-shard indexes grow with the number of schedules (a million runtime schedules).
  for (let shard = 0; shard < SCHEDULE_SHARDS; shard++) {
    const { jobIdx: _prefixOnly, ...indexes } = shardKeys(opts.prefix, shard);
    for (const key of Object.values(indexes)) keys.add(key);
  }
  return [...keys];
}

/**
 * One script call: DBSIZE, MEMORY USAGE of each known key (KEYS), then ARGV[1] random keys with theirs.
 * Server-side, so a sample of thousands costs one round trip and a few milliseconds of Redis, not thousands
 * of client commands. (One Redis only: on a cluster RANDOMKEY sees one node and KEYS span slots, see
 * sampleCluster.) RANDOMKEY draws with replacement: on a Redis with no more keys than ARGV[1], where 2000
 * draws among 83 keys would say nothing more than 83 measurements, it measures every key once instead
 * (KEYS *, no longer than the sample it replaces).
 * Reply: dbsize, 1 when every key was measured, usage per KEYS entry (-1: no such key), then (key, usage) pairs.
 */
const SAMPLE = `
local dbsize = redis.call('DBSIZE')
local all = dbsize <= tonumber(ARGV[1])
local out = { dbsize, all and 1 or 0 }
for _, key in ipairs(KEYS) do
  out[#out + 1] = redis.call('MEMORY', 'USAGE', key, 'SAMPLES', ARGV[2]) or -1
end
local function measure(key)
  out[#out + 1] = key
  out[#out + 1] = redis.call('MEMORY', 'USAGE', key, 'SAMPLES', ARGV[2]) or -1
end
if all then
  for _, key in ipairs(redis.call('KEYS', '*')) do measure(key) end
else
  for _ = 1, tonumber(ARGV[1]) do
    local key = redis.call('RANDOMKEY')
    if not key then break end
    measure(key)
  end
end
return out`;

/**
 * Whether each job hash (KEYS) has finished: 1 when it has a `finishedOn`. A key that is not a hash (a name
 * read as a job's that is something else) counts as unfinished instead of failing the whole estimate.
 */
const FINISHED = `
local out = {}
for i, key in ipairs(KEYS) do
  if redis.call('TYPE', key).ok == 'hash' then out[i] = redis.call('HEXISTS', key, 'finishedOn') else out[i] = 0 end
end
return out`;

/**
 * Estimates tickwork's share of Redis by component from `samples` random keys plus the known large keys,
 * in two round trips, never a scan: its cost does not grow with the number of keys.
 */
export async function estimateComponents(redis: RedisClient, opts: EstimateOptions): Promise<CapacityEstimate> {
  const samples = opts.samples ?? DEFAULT_CAPACITY_SAMPLES;
  const measured = knownLargeKeys({ ...opts, clustered: redis.isCluster });
  const { dbKeys, allKeys, usages, draws } = redis.isCluster ? await sampleCluster(redis, measured, samples) : await sampleOne(redis, measured, samples);

  const bytes = new Map<Component, number>(COMPONENTS.map((c) => [c, 0]));
  const keys = new Map<Component, number>(COMPONENTS.map((c) => [c, 0]));
  const add = (c: Component, b: number, k: number) => {
    bytes.set(c, (bytes.get(c) ?? 0) + b);
    keys.set(c, (keys.get(c) ?? 0) + k);
  };
  const measuredSet = new Set<string>();
  measured.forEach((key, i) => {
    const usage = usages[i] ?? -1;
    if (usage < 0) return; // no such key
    measuredSet.add(key);
    const cls = classifyKey(key, opts.prefix);
    add('component' in cls ? cls.component : 'tickwork-other', usage, 1);
  });

  // Draws that hit a measured key are dropped: the sample stands for the other keys only.
  const drawn = draws.filter(({ key, usage }) => usage >= 0 && !measuredSet.has(key));
  // A job's keys count as pending or finished with the job: its hash says which (one more call for all).
  const classes = drawn.map(({ key }) => classifyKey(key, opts.prefix));
  const jobHashes = classes.flatMap((cls) => ('jobHash' in cls ? [cls.jobHash] : []));
  const finished = await finishedJobs(redis, jobHashes);
  let at = 0;
  const sampled = drawn.map(({ usage }, i) => {
    const cls = classes[i] ?? { component: 'tickwork-other' as const };
    return { usage, component: 'component' in cls ? cls.component : jobComponent(finished[at++] ?? false) };
  });

  const population = Math.max(0, dbKeys - measuredSet.size);
  const scale = sampled.length > 0 ? population / sampled.length : 0;
  for (const s of sampled) add(s.component, s.usage * scale, scale);

  const components = COMPONENTS.map((component) => ({
    component,
    bytes: Math.round(bytes.get(component) ?? 0),
    keys: Math.round(keys.get(component) ?? 0),
  }));
  return {
    dbKeys,
    sampledKeys: sampled.length,
    allKeys,
    measuredKeys: measuredSet.size,
    totalBytes: components.reduce((sum, c) => sum + c.bytes, 0),
    components,
  };
}

interface Sample {
  dbKeys: number;
  /** Every key was drawn once (no more keys than samples), rather than `samples` drawn at random. */
  allKeys: boolean;
  /** MEMORY USAGE of each measured key, -1 when it does not exist. */
  usages: number[];
  draws: { key: string; usage: number }[];
}

/** One Redis: one script call (SAMPLE). */
async function sampleOne(redis: RedisClient, measured: readonly string[], samples: number): Promise<Sample> {
  const reply = (await redis.eval(SAMPLE, measured.length, ...measured, samples, USAGE_SAMPLES)) as (string | number)[];
  const draws: Sample['draws'] = [];
  for (let i = 2 + measured.length; i + 1 < reply.length; i += 2) draws.push({ key: String(reply[i]), usage: Number(reply[i + 1]) });
  return { dbKeys: Number(reply[0] ?? 0), allKeys: Number(reply[1]) === 1, usages: measured.map((_, i) => Number(reply[2 + i])), draws };
}

/**
 * A cluster: the measured keys one pipeline per slot; DBSIZE and random draws per master, each master drawn
 * in proportion to its keys, so one scale over all draws stays unbiased. A few round trips per master, in
 * parallel, still none growing with the number of keys. With no more keys than samples in all, every
 * master lists its keys instead (KEYS *), as on one Redis.
 */
async function sampleCluster(redis: RedisClient, measured: readonly string[], samples: number): Promise<Sample> {
  const masters = await keyNodes(redis);
  const sizes = await Promise.all(masters.map((m) => m.dbsize()));
  const dbKeys = sizes.reduce((a, b) => a + b, 0);
  const allKeys = dbKeys <= samples;
  const usageOf = (key: string): SlotCommand => ['memory', 'USAGE', key, 'SAMPLES', USAGE_SAMPLES];
  const usages = (await pipelineBySlot(redis, measured.map(usageOf), (c) => String(c[2]))).map(([err, v]) => (err || v === null ? -1 : Number(v)));
  const perMaster = await Promise.all(
    masters.map(async (master, i) => {
      const n = dbKeys === 0 ? 0 : Math.round((samples * (sizes[i] ?? 0)) / dbKeys);
      if (n === 0 && !allKeys) return [];
      const keys = allKeys
        ? await master.keys('*')
        : ((await master.pipeline(Array.from({ length: n }, () => ['randomkey'])).exec()) ?? []).flatMap(([, k]) => (typeof k === 'string' ? [k] : []));
      const replies = (await master.pipeline(keys.map((k) => ['memory', 'USAGE', k, 'SAMPLES', USAGE_SAMPLES])).exec()) ?? [];
      return keys.map((key, j) => ({ key, usage: replies[j]?.[0] || replies[j]?.[1] === null ? -1 : Number(replies[j]?.[1]) }));
    }),
  );
  return { dbKeys, allKeys, usages, draws: perMaster.flat() };
}

/** Whether each job hash has finished (has a `finishedOn`): one script call on one Redis, one pipeline per slot on a cluster. */
async function finishedJobs(redis: RedisClient, jobHashes: readonly string[]): Promise<boolean[]> {
  if (jobHashes.length === 0) return [];
  if (!redis.isCluster) return ((await redis.eval(FINISHED, jobHashes.length, ...jobHashes)) as number[]).map((v) => v === 1);
  return (await pipelineBySlot(redis, jobHashes.map((k): SlotCommand => ['hexists', k, 'finishedOn']))).map(([, v]) => v === 1);
}
