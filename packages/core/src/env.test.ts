import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { clusterOptions, DEFAULT_CLUSTER_FAILOVER_MS, type ClusterTarget } from './redis/connection.js';
import { choice, decimal, metricsToken, nodeEnv, parseEnv, port, positiveInt, queuePrefix, redisEnv, redisTargetOf, redisUrl, wholeNumber } from './env.js';
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
  it('a port set but blank is the default, not port 0', () => {
    expect(parseEnv('app', fields, { PORT: '' }).PORT).toBe(3001);
    expect(parseEnv('app', fields, { PORT: '  ' }).PORT).toBe(3001);
    expect(() => parseEnv('app', fields, { PORT: '70000' })).toThrow(/PORT is invalid/);
    expect(parseEnv('app', fields, {}).PORT).toBe(3001);
    expect(parseEnv('app', fields, { PORT: ' 0 ' }).PORT).toBe(0);
  });
  it('a positive integer is digits, within its maximum', () => {
    for (const bad of ['1e9', '1001', '0', '-1', '2.5', 'ten', '0x10']) expect(() => parseEnv('app', fields, { N: bad }), bad).toThrow(/N is invalid/);
    expect(parseEnv('app', fields, { N: '1000' }).N).toBe(1000);
  });
  it('NODE_ENV is read whatever its case or surrounding spaces', () => {
    expect(parseEnv('app', fields, { NODE_ENV: ' Production ' }).NODE_ENV).toBe('production');
    expect(parseEnv('app', fields, {}).NODE_ENV).toBe('development');
  });
});

describe('blank numbers and choices mean their default', () => {
  const fields = z.object({
    COUNT: wholeNumber(2, { min: 0, format: 'must be a whole number, 0 or more' }),
    RATIO: decimal(0.8, { min: 0.1, max: 0.99, format: 'must be a ratio between 0.1 and 0.99' }),
    MODE: choice(['auto', 'off'], 'auto'),
    N: positiveInt(10),
  });
  it('empty or spaces only: the documented default, never 0 (z.coerce read them as 0)', () => {
    for (const blank of ['', ' ', '\t ']) {
      expect(parseEnv('app', fields, { COUNT: blank, RATIO: blank, MODE: blank, N: blank }), JSON.stringify(blank)).toEqual({ COUNT: 2, RATIO: 0.8, MODE: 'auto', N: 10 });
    }
    expect(parseEnv('app', fields, {})).toEqual({ COUNT: 2, RATIO: 0.8, MODE: 'auto', N: 10 });
  });
  it('a value is read as written, and anything else is refused naming the variable', () => {
    expect(parseEnv('app', fields, { COUNT: ' 0 ', RATIO: '.5', MODE: 'off', N: '7' })).toEqual({ COUNT: 0, RATIO: 0.5, MODE: 'off', N: 7 });
    for (const bad of ['-1', '1.5', '1e3', 'two']) expect(() => parseEnv('app', fields, { COUNT: bad }), bad).toThrow(/COUNT is invalid: must be a whole number, 0 or more/);
    for (const bad of ['1', '0', '0.8x', '1e-1']) expect(() => parseEnv('app', fields, { RATIO: bad }), bad).toThrow(/RATIO is invalid: must be a ratio between 0.1 and 0.99/);
    expect(() => parseEnv('app', fields, { MODE: 'on' })).toThrow(/MODE is invalid: must be one of auto, off/);
  });
});

describe('QUEUE_PREFIX and METRICS_TOKEN', () => {
  const fields = z.object({ QUEUE_PREFIX: queuePrefix, METRICS_TOKEN: metricsToken });
  it('QUEUE_PREFIX may not be empty or have spaces around it; unset is tickwork', () => {
    expect(parseEnv('app', fields, {}).QUEUE_PREFIX).toBe('tickwork');
    expect(parseEnv('app', fields, { QUEUE_PREFIX: 'tw:prod' }).QUEUE_PREFIX).toBe('tw:prod');
    expect(() => parseEnv('app', fields, { QUEUE_PREFIX: '' })).toThrow(/QUEUE_PREFIX is set but empty: must not be empty: every key tickwork writes starts with it/);
    expect(() => parseEnv('app', fields, { QUEUE_PREFIX: '   ' })).toThrow(/QUEUE_PREFIX is set but empty: must not be empty/);
    expect(() => parseEnv('app', fields, { QUEUE_PREFIX: 'tickwork ' })).toThrow(/QUEUE_PREFIX is invalid: must not start or end with spaces/);
  });
  it('METRICS_TOKEN is 16 or more printable ASCII characters without spaces: any other would never match a request', () => {
    const good = 'metrics-token-0123456789abcdef';
    expect(parseEnv('app', fields, { METRICS_TOKEN: good }).METRICS_TOKEN).toBe(good);
    expect(parseEnv('app', fields, {}).METRICS_TOKEN).toBeUndefined();
    for (const bad of [' '.repeat(20), `${good} `, ` ${good}`, 'metrics token 0123456789', 'métrics-token-0123456789', `${good}\n`]) {
      expect(() => parseEnv('app', fields, { METRICS_TOKEN: bad }), JSON.stringify(bad)).toThrow(/METRICS_TOKEN is (invalid|set but empty): must be printable ASCII without spaces/);
    }
    expect(() => parseEnv('app', fields, { METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN is invalid: must be at least 16 characters/);
  });
});

describe('REDIS_URL names its database', () => {
  const fields = z.object({ ...redisEnv, QUEUE_PREFIX: queuePrefix });
  it('as a whole number in its path (or ?db=); anything else is refused, not read as database 0', () => {
    for (const ok of ['redis://h:6379', 'redis://h:6379/', 'redis://h:6379/0', 'rediss://u:p@h:6379/15', 'redis://h/99', 'redis://h?db=3']) {
      expect(parseEnv('app', fields, { REDIS_URL: ok }).REDIS_URL, ok).toBe(ok);
    }
    for (const bad of ['redis://h:6379/abc', 'redis://h:6379/-1', 'redis://h:6379/1.5', 'redis://h:6379/2x', 'redis://h?db=x']) {
      expect(() => parseEnv('app', fields, { REDIS_URL: bad }), bad).toThrow(/REDIS_URL is invalid: the database \(the URL's path\) must be a whole number, 0 or more/);
    }
    expect(() => parseEnv('app', fields, { REDIS_URL: 'redis://h/2?db=3' })).toThrow(/REDIS_URL is invalid: names database 2 in its path and "3" in \?db=/);
    expect(() => parseEnv('app', fields, { REDIS_URL: 'redis:h:6379' })).toThrow(/REDIS_URL is invalid: must be a redis:\/\/ or rediss:\/\/ URL/);
  });
  it('a cluster has database 0 only: another is refused with REDIS_CLUSTER_NODES, naming REDIS_URL', () => {
    const env = parseEnv('worker', fields, { REDIS_CLUSTER_NODES: 'a:7000', REDIS_URL: 'redis://:pw@ignored/2' });
    expect(() => redisTargetOf('worker', env)).toThrow(/REDIS_URL is invalid: database 2 refused with REDIS_CLUSTER_NODES: a Redis Cluster has database 0 only/);
    expect(redisTargetOf('worker', { ...env, REDIS_URL: 'redis://:pw@ignored/0' })).toMatchObject({ nodes: [{ host: 'a', port: 7000 }] });
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
