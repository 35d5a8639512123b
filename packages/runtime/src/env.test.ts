import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { nodeEnv, parseEnv, port, positiveInt, redisUrl } from './env.js';
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
