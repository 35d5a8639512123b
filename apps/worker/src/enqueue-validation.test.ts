import { createCatalog, createEnqueue, defineJob, enqueueByName, PayloadTooLargeError, PayloadValidationError, QueueSet, UnknownJobError } from '@tickwork/core';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { captureLogger } from './testing/capture-logger.js';

const signup = defineJob({
  name: 'v.signup',
  queue: 'vq',
  schema: z.object({ email: z.email(), age: z.number().int().min(13), plan: z.enum(['free', 'pro']) }),
  handler: async () => undefined,
});
const blob = defineJob({ name: 'v.blob', queue: 'vq', schema: z.object({ text: z.string() }), handler: async () => undefined });
const catalog = createCatalog([signup, blob]);

let redisServer: RedisServerHandle;
let queues: QueueSet;

beforeAll(async () => {
  redisServer = await startRedisServer();
  queues = new QueueSet(redisServer.client(), 'tw', captureLogger().log);
});
afterAll(async () => {
  await queues?.close();
  await redisServer?.stop();
});

async function queued(): Promise<number> {
  return queues.get('vq').getJobCountByTypes('waiting', 'delayed', 'prioritized');
}

describe('enqueue refuses bad input and enqueues nothing', () => {
  it('an invalid payload: PayloadValidationError naming each bad field', async () => {
    const enqueue = createEnqueue(catalog, queues);
    // @ts-expect-error -- deliberately wrong types, as from untyped callers (CLI, dashboard, JS)
    const err = await enqueue(signup, { email: 'nope', age: 9.5 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadValidationError);
    const issues = (err as PayloadValidationError).issues.map((i) => i.path).sort();
    expect(issues).toEqual(['age', 'email', 'plan']);
    expect((err as Error).message).toMatch(/^invalid payload for job "v\.signup": /);
    expect(await queued()).toBe(0);
  });

  it('an oversized payload (default 512 KiB): PayloadTooLargeError with the sizes', async () => {
    const enqueue = createEnqueue(catalog, queues);
    const err = await enqueue(blob, { text: 'x'.repeat(512 * 1024) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect(err).toMatchObject({ limitBytes: 512 * 1024 });
    expect((err as PayloadTooLargeError).bytes).toBeGreaterThan(512 * 1024);
    expect(await queued()).toBe(0);
    await enqueue(blob, { text: 'x'.repeat(500 * 1024) });
    expect(await queued()).toBe(1);
    await queues.get('vq').drain();
  });

  it('the size limit is configurable', async () => {
    const enqueue = createEnqueue(catalog, queues, { maxPayloadBytes: 100 });
    await expect(enqueue(blob, { text: 'y'.repeat(200) })).rejects.toThrow(/over the 100-byte limit/);
    expect(await queued()).toBe(0);
  });

  it('an unknown job name: UnknownJobError listing the known ones', async () => {
    const err = await enqueueByName(catalog, createEnqueue(catalog, queues), 'v.nope', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnknownJobError);
    expect((err as Error).message).toBe('unknown job "v.nope"; known jobs: v.signup, v.blob');
    expect(await queued()).toBe(0);
  });
});
