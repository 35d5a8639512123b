/**
 * The ledger records a run's result on the connection BullMQ acknowledges the job on, ahead of the
 * acknowledgement, without waiting for the reply (CompletionWriter). These tests pin down what makes that
 * safe: Redis sees the record before the acknowledgement, on one connection; a refused record (the lease
 * was lost) is logged and counted; a record resent after a reconnect is accepted.
 */
import { monitorRedis, startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import { CompletionWriter, IdempotencyLedger, createExactlyOnce, jobRecordKey, leasesLost, runExactlyOnce, type RunRecordPlace } from '@tickwork/exactly-once';
import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureLogger } from '../testing/capture-logger.js';
import { ackConnectionOf } from '@tickwork/bullmq-engine/testing';

let server: RedisServerHandle;
let redis: Redis;
const silent = pino({ level: 'silent' });
const labels = { queue: 'q', job: 'j' };

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
});
afterAll(async () => {
  await server.stop();
});

interface Seen {
  args: string[];
  source: string;
}

// Both places a record can live: its own key (runs with a key of their own), and the job's hash (runs named
// by a job id BullMQ generated), where the completion is a field written into the job BullMQ then acknowledges.
const PLACES = [
  { place: 'its own key', queueName: 'ahead', customIds: true },
  { place: "the job's hash", queueName: 'aheadj', customIds: false },
] as const;

describe('results written ahead of the acknowledgement', () => {
  it.each(PLACES)("reach Redis before BullMQ's moveToFinished of the same job, on the same connection (record in $place)", async ({ queueName, customIds }) => {
    const seen: Seen[] = [];
    const monitor = await monitorRedis(server, ({ args, source }) => seen.push({ args, source }));

    const eo = createExactlyOnce(redis, { prefix: 'tw' });
    const queue = new Queue(queueName, { connection: server.client(), prefix: 'tw' });
    const added = await queue.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'n', data: {}, opts: customIds ? { jobId: `ack-${i}` } : {} })));
    const ids = added.map((j) => String(j.id));
    const placeOf = (id: string): RunRecordPlace => (customIds ? { kind: 'key' } : { kind: 'job', jobKey: jobRecordKey('tw', queueName, id) });
    const recordKeyOf = (id: string) => (customIds ? `tw:ledger:ahead#${id}` : `tw:${queueName}:${id}`);
    let done = 0;
    const worker: Worker = new Worker(
      queueName,
      async (job) =>
        runExactlyOnce(
          eo,
          {
            key: `ahead#${job.id}`,
            place: placeOf(String(job.id)),
            log: silent,
            labels,
            ackConnection: await ackConnectionOf(worker),
            defer: () => Promise.reject(new Error('no defer')),
          },
          async () => ({ ok: job.id }),
        ),
      { connection: server.client(), prefix: 'tw', concurrency: 5 },
    );
    worker.on('completed', () => done++);
    await waitFor(async () => done === ids.length, { timeoutMs: 10_000, what: 'all jobs completed' });
    await worker.close();
    await queue.close();
    monitor.stop();

    // Scripts sent by clients (MONITOR also lists the commands scripts run, from source "lua").
    const scripts = seen.filter((c) => c.source !== 'lua' && /^eval(sha)?$/i.test(c.args[0] ?? ''));
    for (const id of ids) {
      // The completion script (the claim went earlier, in a batch on the ledger's own connection).
      const record = scripts.findIndex((c) => c.args.includes(recordKeyOf(id)) && c.args[1] === CompletionWriter.scriptSha);
      // BullMQ's moveToFinished: the job's key and the completed set among its keys.
      const ack = scripts.findIndex((c) => c.args.includes(`tw:${queueName}:${id}`) && c.args.includes(`tw:${queueName}:completed`));
      expect({ id, recorded: record >= 0, acknowledged: ack >= 0 }).toEqual({ id, recorded: true, acknowledged: true });
      expect({ id, recordedFirst: record < ack }).toEqual({ id, recordedFirst: true });
      expect({ id, connection: scripts[record]?.source }).toEqual({ id, connection: scripts[ack]?.source });
      expect(await eo.ledger.inspect(`ahead#${id}`, placeOf(id))).toMatchObject({ state: 'done', result: { ok: id } });
    }
    // A run named by a generated job id keeps no key of its own: its record goes with the job.
    if (!customIds) expect(await redis.exists(...ids.map((id) => `tw:ledger:ahead#${id}`))).toBe(0);
  });

  it('a result refused because the lease was lost: the job is still acknowledged, the loss is logged and counted', async () => {
    const eo = createExactlyOnce(redis, { prefix: 'tw', leaseMs: 60_000 });
    const key = `lost-${Date.now()}`;
    const { log, entries } = captureLogger();
    const before = (await leasesLost.get()).values.find((v) => v.labels.job === 'lost-job')?.value ?? 0;
    const result = await runExactlyOnce(
      eo,
      { key, log, labels: { queue: 'q', job: 'lost-job' }, ackConnection: server.client(), defer: () => Promise.reject(new Error('no defer')) },
      async () => {
        // Another delivery took the run over (this one was cut off from renewing, say by a long pause).
        const record = (await redis.get(eo.ledger.keyOf(key))) ?? '';
        await redis.set(eo.ledger.keyOf(key), record.replace(/^r\|[^|]*\|/, 'r|someone-else|'), 'KEEPTTL');
        return 'late';
      },
    );
    expect(result).toBe('late');
    await waitFor(async () => entries().some((e) => String(e.msg).includes('lease')), { timeoutMs: 5_000, what: 'the lease loss logged' });
    const after = (await leasesLost.get()).values.find((v) => v.labels.job === 'lost-job')?.value ?? 0;
    expect(after).toBe(before + 1);
    // The new owner's record is untouched: it records its own result.
    expect(await eo.ledger.inspect(key)).toMatchObject({ state: 'running', owner: 'someone-else' });
  });

  it('records results after Redis forgot the script (SCRIPT FLUSH), and loads it again after a reconnect', async () => {
    const ledger = new IdempotencyLedger(redis, { prefix: 'tw' });
    const conn = server.client();
    const writer = new CompletionWriter(conn);
    const complete = async (name: string) => {
      const claim = await ledger.claim(name, { kind: 'key' }, 'me');
      if (claim.kind !== 'claimed') throw new Error('expected a claim');
      const reply = new Promise((resolve) => void writer.complete(ledger.keyOf(name), ['k', 'me', JSON.stringify({ v: name }), ledger.windowMs, ledger.stepsKeyOf(name)], resolve));
      return reply;
    };
    expect(await complete('flush-1')).toBe(1);
    await redis.script('FLUSH');
    expect(await complete('flush-2')).toBe(1); // NOSCRIPT, then sent whole
    expect(await complete('flush-3')).toBe(1); // loaded again first
    await redis.script('FLUSH');
    await conn.disconnect(true); // reconnects: the next call loads the script again before it
    await waitFor(async () => conn.status === 'ready', { timeoutMs: 5_000, what: 'the connection back' });
    expect(await complete('flush-4')).toBe(1);
    expect((await redis.script('EXISTS', CompletionWriter.scriptSha)) as number[]).toEqual([1]);
    for (const n of ['flush-1', 'flush-2', 'flush-3', 'flush-4']) expect(await ledger.inspect(n)).toMatchObject({ state: 'done', result: n });
  });

  it('accepts the same completion twice (a batch resent after a reconnect) and refuses a stranger', async () => {
    const ledger = new IdempotencyLedger(redis, { prefix: 'tw' });
    const claim = await ledger.claim('resent', { kind: 'key' }, 'me');
    if (claim.kind !== 'claimed') throw new Error('expected a claim');
    const writer = new CompletionWriter(server.client());
    const outcomes: unknown[] = [];
    // The completion's arguments as LedgerRun.completeAhead sends them: mode, owner, result, done TTL, steps key.
    const steps = ledger.stepsKeyOf('resent');
    const args = ['k', 'me', JSON.stringify({ v: 7 }), ledger.windowMs, steps];
    await writer.complete(ledger.keyOf('resent'), args, (r) => outcomes.push(r));
    await writer.complete(ledger.keyOf('resent'), args, (r) => outcomes.push(r));
    await writer.complete(ledger.keyOf('resent'), ['k', 'stranger', JSON.stringify({ v: 8 }), ledger.windowMs, steps], (r) => outcomes.push(r));
    await waitFor(async () => outcomes.length === 3, { timeoutMs: 5_000, what: 'three replies' });
    expect(outcomes).toEqual([1, 1, 0]);
    expect(await ledger.inspect('resent')).toMatchObject({ state: 'done', result: 7, claims: 1 });
  });
});
