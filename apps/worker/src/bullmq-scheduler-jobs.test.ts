/**
 * A job made by one of BullMQ's own job schedulers (`queue.upsertJobScheduler`) carries its due time only in
 * its id (`repeat:<scheduler id>:<due ms>`: BullMQ 6 keeps no prevMillis in its options), and a run of it
 * is keyed by that time (core's run-identity.ts). This holds the installed BullMQ to that format, on the
 * fast paths and the public paths alike: a release that changes it fails here, not as runs keyed wrongly.
 */
import { deliveryOf, idempotencyKeyOf, nominalTimeOf, defineJob } from '@tickwork/core';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import { Queue, type Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

let server: RedisServerHandle;
let queue: Queue;
beforeAll(async () => {
  server = await startRedisServer();
  queue = new Queue('bullmq-schedulers', { connection: server.client() });
});
afterAll(async () => {
  await queue.close();
  await server.stop();
});

describe("a BullMQ job scheduler's job", () => {
  it('tells its due time through its id, and its run is keyed by it', async () => {
    const due = Date.UTC(2030, 0, 1, 9, 0, 0);
    await queue.upsertJobScheduler('nightly', { pattern: '0 9 * * *', tz: 'UTC', startDate: due - 1000 }, { name: 'report', data: {} });
    const [job] = (await queue.getJobs(['delayed'])) as Job[];
    expect(job?.repeatJobKey).toBe('nightly');
    expect(job?.id).toBe(`repeat:nightly:${due}`);
    const delivery = deliveryOf(job as Job);
    expect(nominalTimeOf(delivery)?.getTime()).toBe(due);
    const def = defineJob({ name: 'report', queue: 'bullmq-schedulers', schema: z.object({}), handler: async () => undefined });
    expect(idempotencyKeyOf(def, delivery, {})).toBe(`nightly@${new Date(due).toISOString()}`);
  });
});
