import type { RedisClient } from './connection.js';
import type { Logger } from '../logger.js';
import { keyNodes } from './scan.js';

/** The fields of Redis `INFO memory` that capacity needs. */
export interface RedisMemoryInfo {
  usedBytes: number;
  /** used_memory minus Redis's own overhead: what the keys take. */
  datasetBytes: number;
  /** 0 when unset (Redis then grows until the machine runs out). */
  maxBytes: number;
  policy: string;
  /** usedBytes / maxBytes, or null without a maxmemory. */
  ratio: number | null;
}

/** Parses `INFO memory` text (`field:value` lines). */
export function parseMemoryInfo(info: string): RedisMemoryInfo {
  const fields = new Map<string, string>();
  for (const line of info.split(/\r?\n/)) {
    const at = line.indexOf(':');
    if (at > 0) fields.set(line.slice(0, at), line.slice(at + 1).trim());
  }
  const num = (name: string) => {
    const value = Number(fields.get(name));
    return Number.isFinite(value) ? value : 0;
  };
  const usedBytes = num('used_memory');
  const maxBytes = num('maxmemory');
  return {
    usedBytes,
    datasetBytes: num('used_memory_dataset'),
    maxBytes,
    policy: fields.get('maxmemory_policy') ?? 'unknown',
    ratio: maxBytes > 0 ? usedBytes / maxBytes : null,
  };
}

/**
 * INFO rather than CONFIG GET: managed Redis services often disable CONFIG, never INFO. On a cluster each
 * master has its own memory: the one nearest its maxmemory (else the largest) is reported, since the first
 * master to fill up is the one that refuses writes.
 */
export async function readMemoryInfo(redis: RedisClient): Promise<RedisMemoryInfo> {
  if (!redis.isCluster) return parseMemoryInfo(await redis.info('memory'));
  const infos = await Promise.all((await keyNodes(redis)).map(async (node) => parseMemoryInfo(await node.info('memory'))));
  const fullness = (i: RedisMemoryInfo) => i.ratio ?? i.usedBytes / Number.MAX_SAFE_INTEGER;
  return infos.reduce((worst, i) => (fullness(i) > fullness(worst) ? i : worst));
}

/**
 * What is wrong with Redis's memory settings for tickwork, as sentences that say what to set. A queue must
 * never lose keys to eviction (a job, a lock or a ledger record would vanish silently), so the policy must be
 * `noeviction`; and without a `maxmemory`, Redis grows until the machine kills it.
 */
export function memoryConfigProblems(info: Pick<RedisMemoryInfo, 'maxBytes' | 'policy'>): string[] {
  const problems: string[] = [];
  if (info.maxBytes === 0) {
    problems.push('Redis has no maxmemory: set `maxmemory <bytes>` (see the README, "Capacity") so it refuses writes before the machine runs out of memory');
  }
  if (info.policy !== 'noeviction') {
    problems.push(`Redis maxmemory-policy is "${info.policy}": set \`maxmemory-policy noeviction\`; any other policy can evict queue keys, locks and ledger records`);
  }
  return problems;
}

/**
 * Logs one warn line per problem of Redis's memory settings (or one info line that they are fine). Every
 * app calls it at start; it never throws
 * (an app starts while Redis is down and this check then simply does not happen).
 */
export async function warnOnRedisMemoryConfig(redis: RedisClient, log: Logger): Promise<string[]> {
  try {
    const info = await readMemoryInfo(redis);
    const problems = memoryConfigProblems(info);
    for (const problem of problems) log.warn({ maxmemory: info.maxBytes, policy: info.policy }, problem);
    if (problems.length === 0) log.info({ maxmemory: info.maxBytes, policy: info.policy }, 'redis memory settings ok');
    return problems;
  } catch (err) {
    log.debug({ err: { message: (err as Error).message } }, 'could not read Redis memory settings');
    return [];
  }
}
