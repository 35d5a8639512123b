import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseEnv, port, redisUrl } from './env.js';
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
