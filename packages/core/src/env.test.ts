import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { clusterOptions, DEFAULT_CLUSTER_FAILOVER_MS, type ClusterTarget } from './redis/connection.js';
import { nodeEnv, parseEnv, port, positiveInt, redisEnv, redisTargetOf, redisUrl } from './env.js';
import { EnvError } from './errors.js';

const schema = z.object({ REDIS_URL: redisUrl, PORT: port(3001), SECRET: z.string().min(1) });

describe('parseEnv', () => {
  it('applies defaults', () => {
    expect(parseEnv('app', schema, { SECRET: 'x' })).toEqual({ REDIS_URL: 'redis://127.0.0.1:6379', PORT: 3001, SECRET: 'x' });
  });

  it('reports every bad variable by name in one error', () => {
    let error: unknown;
    try {
      parseEnv('scheduler', schema, { REDIS_URL: 'http://nope', PORT: 'eighty' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(EnvError);
    const message = (error as Error).message;
    expect(message).toMatch(/^scheduler: invalid environment/);
    expect(message).toContain('REDIS_URL is invalid: must be a redis:// or rediss:// URL');
    expect(message).toContain('PORT is invalid');
    expect(message).toContain('SECRET is not set');
  });
});

describe('shared env fields', () => {
  const fields = z.object({ PORT: port(3001), N: positiveInt(10, 1000), NODE_ENV: nodeEnv });
  it('a port set but empty is an error, not port 0; unset is the default', () => {
    expect(() => parseEnv('app', fields, { PORT: '' })).toThrow(/PORT is set but empty/);
    expect(() => parseEnv('app', fields, { PORT: '70000' })).toThrow(/PORT is invalid/);
    expect(parseEnv('app', fields, {}).PORT).toBe(3001);
    expect(parseEnv('app', fields, { PORT: ' 0 ' }).PORT).toBe(0);
  });
  it('a positive integer is digits, within its maximum', () => {
    for (const bad of ['1e9', '1001', '0', '-1', '2.5', '', 'ten']) expect(() => parseEnv('app', fields, { N: bad }), bad).toThrow(/N is/);
    expect(parseEnv('app', fields, { N: '1000' }).N).toBe(1000);
  });
  it('NODE_ENV is read whatever its case or surrounding spaces', () => {
    expect(parseEnv('app', fields, { NODE_ENV: ' Production ' }).NODE_ENV).toBe('production');
    expect(parseEnv('app', fields, {}).NODE_ENV).toBe('development');
  });
});

describe('Redis Cluster env', () => {
  const redis = z.object({ ...redisEnv, QUEUE_PREFIX: z.string().default('tickwork') });
  it('REDIS_CLUSTER_NODES is host:port[,host:port...]; unset means one Redis at REDIS_URL', () => {
    const env = parseEnv('worker', redis, { REDIS_CLUSTER_NODES: 'redis-0:6379, 10.0.0.2:7000,[::1]:7001' });
    expect(env.REDIS_CLUSTER_NODES).toEqual([
      { host: 'redis-0', port: 6379 },
      { host: '10.0.0.2', port: 7000 },
      { host: '::1', port: 7001 },
    ]);
    expect(env.REDIS_CLUSTER_FAILOVER_MS).toBe(DEFAULT_CLUSTER_FAILOVER_MS);
    expect(redisTargetOf('worker', parseEnv('worker', redis, {}))).toBe('redis://127.0.0.1:6379');
    for (const bad of ['redis-0', 'redis-0:6379,', 'redis://a:6379', 'a:0', 'a:70000']) {
      expect(() => parseEnv('worker', redis, { REDIS_CLUSTER_NODES: bad }), bad).toThrow(/REDIS_CLUSTER_NODES is invalid: must be host:port\[,host:port\.\.\.\]/);
    }
    expect(parseEnv('worker', redis, { REDIS_CLUSTER_NODES: ' ' }).REDIS_CLUSTER_NODES).toBeUndefined(); // compose's ${VAR:-}
  });
  it('on a cluster QUEUE_PREFIX may not carry a hash tag; the cluster reuses REDIS_URL only for credentials', () => {
    const env = parseEnv('worker', redis, { REDIS_CLUSTER_NODES: 'a:7000', QUEUE_PREFIX: '{tickwork}', REDIS_URL: 'rediss://u:p@ignored:1' });
    expect(() => redisTargetOf('worker', env)).toThrow(/QUEUE_PREFIX is invalid: "\{tickwork\}" contains \{ or \}/);
    const target = redisTargetOf('worker', { ...env, QUEUE_PREFIX: 'tickwork' });
    expect(target).toEqual({ nodes: [{ host: 'a', port: 7000 }], url: 'rediss://u:p@ignored:1', failoverMs: DEFAULT_CLUSTER_FAILOVER_MS });
    const options = clusterOptions('command', target as ClusterTarget);
    expect(options.redisOptions).toMatchObject({ username: 'u', password: 'p', tls: {} });
  });
  it("the cluster client's retry budget outlasts the failover time it is given", () => {
    for (const failoverMs of [1000, DEFAULT_CLUSTER_FAILOVER_MS, 120_000]) {
      const o = clusterOptions('blocking', { nodes: [{ host: 'a', port: 1 }], url: 'redis://a', failoverMs });
      expect(((o.maxRedirections ?? 16) / 2) * (o.retryDelayOnFailover ?? 100)).toBeGreaterThanOrEqual(failoverMs);
      expect(o.enableOfflineQueue).toBe(true);
      expect(o.redisOptions?.maxRetriesPerRequest).toBeNull();
    }
  });
});
