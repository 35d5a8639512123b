/**
 * The ordering argument on Redis Cluster: a result written ahead (CompletionWriter) reaches the master of
 * its queue's slot before BullMQ's moveToFinished of the same job, on the same connection, as on one Redis
 * (exactly-once/complete-ahead.test.ts). Two queues on different masters share one ack connection (one
 * Cluster client), so the writer's batches span two slots and are split per slot. Each master is watched
 * with MONITOR.
 */
import { createExactlyOnce, jobRecordKey, RedisStepSlotError, runExactlyOnce, type RunRecordPlace } from '@tickwork/exactly-once';
import { createRedis, type RedisClient } from '@tickwork/core';
import { monitorRedis, startRedisCluster, waitFor, type RedisClusterHandle } from '@tickwork/testkit';
import { Queue, Worker } from 'bullmq';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ackConnectionOf } from '@tickwork/bullmq-engine/testing';

const silent = pino({ level: 'silent' });
const QUEUES = ['alpha', 'delta'] as const; // slots 865 and 9053: different masters

let cluster: RedisClusterHandle;
let ledgerRedis: RedisClient;
beforeAll(async () => {
  cluster = await startRedisCluster();
  ledgerRedis = createRedis(cluster.target, 'command');
}, 60_000);
afterAll(async () => {
  ledgerRedis?.disconnect();
  await cluster?.stop();
});

interface Seen {
  args: string[];
  source: string;
}

it.each([
  { place: 'its own key', customIds: true },
  { place: "the job's hash", customIds: false },
])("results reach their queue's master before moveToFinished, on the same connection (record in $place)", async ({ customIds }) => {
  const prefix = customIds ? 'tk' : 'tj';
  const seen = new Map<string, Seen[]>();
  const monitors = await Promise.all(
    QUEUES.map(async (q) => {
      const master = await cluster.masterOf(`{${q}}`);
      const list: Seen[] = [];
      seen.set(q, list);
      return monitorRedis(master, ({ args, source }) => list.push({ args, source }));
    }),
  );
  const eo = createExactlyOnce(ledgerRedis, { prefix });
  const connection = createRedis(cluster.target, 'blocking'); // one ack connection for both queues
  const producer = createRedis(cluster.target, 'command');
  const placeOf = (q: string, id: string): RunRecordPlace =>
    customIds ? { kind: 'key', queue: q } : { kind: 'job', jobKey: jobRecordKey(prefix, q, id, true), queue: q };
  const recordKeyOf = (q: string, id: string) => (customIds ? `${prefix}:{${q}}:ledger:ahead#${id}` : `${prefix}:{${q}}:${q}:${id}`);

  const ids = new Map<string, string[]>();
  const queues: Queue[] = [];
  const workers: Worker[] = [];
  let done = 0;
  for (const q of QUEUES) {
    const queue = new Queue(q, { connection: producer, prefix: `${prefix}:{${q}}` });
    queues.push(queue);
    const added = await queue.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'n', data: {}, opts: customIds ? { jobId: `ack-${i}` } : {} })));
    ids.set(q, added.map((j) => String(j.id)));
    const worker: Worker = new Worker(
      q,
      async (job) =>
        runExactlyOnce(
          eo,
          {
            key: `ahead#${job.id}`,
            place: placeOf(q, String(job.id)),
            log: silent,
            labels: { queue: q, job: 'n' },
            ackConnection: await ackConnectionOf(worker),
            defer: () => Promise.reject(new Error('no defer')),
          },
          async () => ({ ok: job.id }),
        ),
      { connection, prefix: `${prefix}:{${q}}`, concurrency: 5 },
    );
    worker.on('completed', () => done++);
    workers.push(worker);
  }
  await waitFor(async () => done === 40, { timeoutMs: 20_000, what: 'all 40 jobs completed' });
  await Promise.all(workers.map((w) => w.close()));
  await Promise.all(queues.map((q) => q.close()));
  for (const m of monitors) m.stop();
  connection.disconnect();
  producer.disconnect();

  for (const q of QUEUES) {
    // Scripts sent by clients to this queue's master (MONITOR also lists what scripts run, from "lua").
    const scripts = (seen.get(q) ?? []).filter((c) => c.source !== 'lua' && /^eval(sha)?$/i.test(c.args[0] ?? ''));
    for (const id of ids.get(q) ?? []) {
      const record = scripts.findIndex((c) => c.args.includes(recordKeyOf(q, id)) && c.args[1]?.includes('ops.d =') && !c.args[1].includes('ops.c ='));
      const ack = scripts.findIndex((c) => c.args.includes(`${prefix}:{${q}}:${q}:${id}`) && c.args.includes(`${prefix}:{${q}}:${q}:completed`));
      expect({ q, id, recorded: record >= 0, acknowledged: ack >= 0 }).toEqual({ q, id, recorded: true, acknowledged: true });
      expect({ q, id, recordedFirst: record < ack }).toEqual({ q, id, recordedFirst: true });
      expect({ q, id, connection: scripts[record]?.source }).toEqual({ q, id, connection: scripts[ack]?.source });
      expect(await eo.ledger.inspect(`ahead#${id}`, placeOf(q, id))).toMatchObject({ state: 'done', result: { ok: id } });
    }
    // Every completion script on this master names keys of this queue's slot only.
    const completions = scripts.filter((c) => c.args[1]?.includes('ops.d =') && !c.args[1].includes('ops.c ='));
    expect(completions.length).toBeGreaterThan(0);
    for (const c of completions) expect(c.args.filter((a) => a.startsWith(`${prefix}:{`)).every((a) => a.startsWith(`${prefix}:{${q}}:`))).toBe(true);
  }
}, 60_000);

it("a redisStep's writes must carry its queue's tag: an untagged key is refused by name, a tagged one commits with the step", async () => {
  const eo = createExactlyOnce(ledgerRedis, { prefix: 'rs' });
  const opts = (key: string) => ({
    key,
    place: { kind: 'key', queue: 'alpha' } as const,
    log: silent,
    labels: { queue: 'alpha', job: 'n' },
    defer: () => Promise.reject(new Error('no defer')),
  });
  const refused = runExactlyOnce(eo, opts('untagged'), (run) => run.redisStep('write', (tx) => tx.set('myapp:charges', '1')));
  await expect(refused).rejects.toBeInstanceOf(RedisStepSlotError);
  await expect(refused).rejects.toThrow(/"myapp:charges", outside its run's slot: .* must contain the queue's hash tag \{alpha\}/);
  expect(await ledgerRedis.exists('myapp:charges')).toBe(0);

  await runExactlyOnce(eo, opts('tagged'), (run) => run.redisStep('write', (tx) => tx.set('myapp:{alpha}:charges', '1')));
  expect(await ledgerRedis.get('myapp:{alpha}:charges')).toBe('1');
  expect(await eo.ledger.inspect('tagged', { kind: 'key', queue: 'alpha' })).toMatchObject({ state: 'done' });
});
