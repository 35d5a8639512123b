import { fileURLToPath } from 'node:url';
import { catalog } from '@tickwork/jobs';
import { capacityReport, classifyKey, COMPONENTS, jobComponent, moveToDeadLetter, type CapacityReport, type Component } from '@tickwork/operations';
import { createLogger, occurrenceKey, QueueSet } from '@tickwork/core';
import { IdempotencyLedger } from '@tickwork/exactly-once';
import { mergeOccurrence } from '@tickwork/schedules';
import { startApp, startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 180_000 });

const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const PREFIX = 'tw';
const TOTAL_KEYS = 1_000_000;
let redisServer: RedisServerHandle;
let redis: Redis;
let queues: QueueSet;

async function stats(...args: string[]): Promise<{ code: number | null; out: string; ms: number }> {
  const started = performance.now();
  const app = startApp(CLI, { REDIS_URL: redisServer.url, QUEUE_PREFIX: PREFIX, LOG_LEVEL: 'silent' }, ['stats', ...args]);
  const code = await app.exited;
  return { code, out: app.lines.join('\n'), ms: performance.now() - started };
}

/** `count` byte-for-byte copies of `source` (DUMP/RESTORE) named `<name><i>`, 50,000 per script call. */
async function copies(source: string, name: string, count: number): Promise<void> {
  const copy = `local p = redis.call('DUMP', KEYS[1])
for i = tonumber(ARGV[2]), tonumber(ARGV[3]) do redis.call('RESTORE', ARGV[1] .. i, 0, p) end`;
  for (let from = 1; from <= count; from += 50_000) await redis.eval(copy, 1, source, name, from, Math.min(count, from + 49_999));
}

/** Plain strings outside the prefix, as `DEBUG POPULATE` makes them (`key:<i>` = `value:<i>`). */
async function populate(count: number): Promise<void> {
  const fill = `for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do redis.call('SET', 'key:' .. i, 'value:' .. i) end`;
  for (let from = 1; from <= count; from += 100_000) await redis.eval(fill, 0, from, Math.min(count, from + 99_999));
}

/** The truth to compare with: every key measured (SCAN + MEMORY USAGE, the size the estimate extrapolates). */
async function measureEveryKey(): Promise<Map<Component, { bytes: number; keys: number }>> {
  const scan = `local r = redis.call('SCAN', ARGV[1], 'COUNT', 20000)
local out = { r[1] }
for _, k in ipairs(r[2]) do out[#out + 1] = k; out[#out + 1] = redis.call('MEMORY', 'USAGE', k, 'SAMPLES', 5) end
return out`;
  // Whether each job hash has a finishedOn, in one script call per scanned page: a pipeline of one HEXISTS per
  // job key (a quarter of a million) took about as long as the scan itself. A reply other than 1 (an error:
  // not a hash) counts as unfinished, as a failed HEXISTS in a pipeline did.
  const finishedOf = `local out = {}
for i, k in ipairs(KEYS) do out[i] = redis.pcall('HEXISTS', k, 'finishedOn') == 1 and 1 or 0 end
return out`;
  const truth = new Map<Component, { bytes: number; keys: number }>(COMPONENTS.map((c) => [c, { bytes: 0, keys: 0 }]));
  let cursor = '0';
  do {
    const reply = (await redis.eval(scan, 0, cursor)) as (string | number)[];
    cursor = String(reply[0]);
    const jobKeys: { hash: string; usage: number }[] = [];
    for (let i = 1; i + 1 < reply.length; i += 2) {
      const cls = classifyKey(String(reply[i]), PREFIX);
      const usage = Number(reply[i + 1]);
      if ('jobHash' in cls) jobKeys.push({ hash: cls.jobHash, usage });
      else add(truth, cls.component, usage);
    }
    const finished = jobKeys.length > 0 ? ((await redis.eval(finishedOf, jobKeys.length, ...jobKeys.map((j) => j.hash))) as number[]) : [];
    jobKeys.forEach((j, i) => add(truth, jobComponent(finished[i] === 1), j.usage));
  } while (cursor !== '0');
  return truth;
}

function add(to: Map<Component, { bytes: number; keys: number }>, c: Component, bytes: number): void {
  const t = to.get(c);
  if (t) {
    t.bytes += bytes;
    t.keys += 1;
  }
}

let truth: Map<Component, { bytes: number; keys: number }>;

beforeAll(async () => {
  redisServer = await startRedisServer();
  redis = redisServer.client();
  await redis.config('SET', 'maxmemory', String(4 * 1024 ** 3));
  queues = new QueueSet(redis, PREFIX, createLogger('test', 'silent'));

  // Real tickwork keys, made by tickwork's own code: ledger records, waiting jobs, a completed job, a
  // dead letter, a schedule's history.
  const ledger = new IdempotencyLedger(redis, { prefix: PREFIX });
  for (let i = 0; i < 10; i++) {
    const claim = await ledger.claim(`email.send#real-${i}`);
    if (claim.kind !== 'claimed') throw new Error('expected a fresh claim');
    await claim.run.complete({ sent: true, messageId: `<${i}@example.com>` });
  }
  const email = queues.get('email');
  await email.addBulk(Array.from({ length: 5000 }, (_, i) => ({ name: 'email.send', data: { to: 'a@example.com', subject: 'hi', body: `pending ${i}` }, opts: { jobId: `p-${i}` } })));
  const worker = new Worker('email', null, { connection: redisServer.client(), prefix: PREFIX });
  for (const [id, outcome] of [['done-1', 'complete'], ['dead-1', 'fail']] as const) {
    await email.add('email.send', { to: 'a@example.com', subject: 'hi', body: id }, { jobId: id, attempts: 1, lifo: true });
    const job = await waitFor(() => worker.getNextJob(`tok-${id}`), { what: `take ${id}` });
    if (outcome === 'complete') await job.moveToCompleted({ delivered: true }, `tok-${id}`, false);
    else await job.moveToFailed(new Error('smtp down'), `tok-${id}`);
  }
  await worker.close();
  const failed = await email.getJob('dead-1');
  const dead = failed && (await moveToDeadLetter({ job: failed, queues, redis, catalog }));
  if (!dead) throw new Error('dead-1 was not dead-lettered');
  for (let i = 0; i < 60; i++) {
    const nominal = new Date(Date.UTC(2026, 0, 1, 0, i));
    const id = occurrenceKey('sessions.cleanup', nominal);
    await mergeOccurrence(redis, PREFIX, 'sessions.cleanup', id, nominal.getTime(), { outcome: 'completed', endedAt: nominal.toISOString() }, { id, schedule: 'sessions.cleanup', nominal: nominal.toISOString(), trigger: 'schedule' }, 'lastSuccess');
  }

  // Bulk: byte-for-byte copies of those real keys, then filler up to a million keys.
  await copies(ledger.keyOf('email.send#real-0'), `${PREFIX}:ledger:email.send#copy-`, 200_000);
  await copies(`${PREFIX}:email:p-0`, `${PREFIX}:email:copy-pending-`, 95_000);
  await copies(`${PREFIX}:email:done-1`, `${PREFIX}:email:copy-done-`, 100_000);
  await copies(`${PREFIX}:email.dlq:${dead.deadLetter.dlqJobId}`, `${PREFIX}:email.dlq:copy-dead-`, 30_000);
  await populate(TOTAL_KEYS - (await redis.dbsize()));
  expect(await redis.dbsize()).toBe(TOTAL_KEYS);
  truth = await measureEveryKey();
});
afterAll(async () => {
  await queues?.close();
  await redisServer?.stop();
});

/**
 * Sampling error: a component holding a share p of the sampled keys is estimated from about N·p draws, so
 * its relative standard error is about sqrt((1 - p) / (N·p)). Allowed: 4 standard errors, plus one draw
 * (the estimate moves in steps of one sampled key, 1/(N·p) of the truth: a component of three keys in a
 * million, drawn once in 20,000 samples, is estimated at about 17 times its size), plus 2%.
 */
function expectClose(report: CapacityReport): void {
  const n = report.estimate.sampledKeys;
  const population = report.estimate.dbKeys - report.estimate.measuredKeys;
  for (const c of report.estimate.components) {
    const t = truth.get(c.component) ?? { bytes: 0, keys: 0 };
    const p = Math.min(1, t.keys / population);
    const tolerance = p === 0 ? 0 : t.bytes * (4 * Math.sqrt((1 - p) / (n * p)) + 1 / (n * p) + 0.02);
    expect({ component: c.component, error: Math.abs(c.bytes - t.bytes) <= tolerance ? 'within' : Math.abs(c.bytes - t.bytes) / t.bytes })
      .toEqual({ component: c.component, error: 'within' });
  }
}

describe('tickwork stats on a Redis with a million keys', () => {
  it('answers in under a second with estimates near the truth, and says they are estimates', async () => {
    expect((await stats()).code).toBe(0); // warm-up: the OS file cache, Redis's script cache
    // The answer's own work (what grows with the keyspace, if anything): the report the command prints, made
    // in this process on the million-key Redis. Node's start-up and module loading, which every CLI command
    // pays whatever Redis holds, are printed below but not asserted: on this shared 2-core machine they vary
    // with the other processes' load, not with the keyspace.
    const source = { redis, prefix: PREFIX, catalog };
    const timings: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      await capacityReport(source);
      timings.push(performance.now() - t0);
    }
    const runs = [await stats(), await stats(), await stats()].sort((a, b) => a.ms - b.ms);
    const text = runs[0] ?? (await stats());
    console.log(
      `tickwork stats on ${TOTAL_KEYS} keys: report ${timings.map((t) => `${Math.round(t)} ms`).join(', ')}; ` +
        `whole CLI process ${runs.map((r) => `${Math.round(r.ms)} ms`).join(', ')}`,
    );
    expect(text.code).toBe(0);
    expect(text.out).toContain('of 4.0 GiB maxmemory');
    expect(text.out).toContain('policy noeviction');
    expect(text.out).toContain('Keys          1000000');
    expect(text.out).toMatch(/estimates from (19\d\d|2000) randomly sampled keys of 1000000 \(sizes extrapolated\)/);
    expect(text.out).toMatch(/^ledger +\d/m);
    expect(Math.min(...timings)).toBeLessThan(1000);

    const json = await stats('--json');
    expect(json.code).toBe(0);
    const report = JSON.parse(json.out) as CapacityReport;
    expect(report.estimate.dbKeys).toBe(TOTAL_KEYS);
    expect(report.estimate.sampledKeys).toBeGreaterThan(1990); // a draw of a measured key is dropped
    expectClose(report);
    expect(report.queues.find((q) => q.queue === 'email')).toMatchObject({ waiting: 5000, completed: 1, failed: 0, dlq: { entries: 1 } });
    expect(report.queues.find((q) => q.queue === 'email')?.dlq.oldestAgeSeconds).toBeGreaterThanOrEqual(0);
    expect(report.problems).toEqual([]);
  });

  it('more samples, a sharper estimate', async () => {
    const json = await stats('--json', '--samples', '20000');
    expect(json.code).toBe(0);
    const report = JSON.parse(json.out) as CapacityReport;
    expect(report.estimate.sampledKeys).toBeGreaterThan(19_900);
    expectClose(report);
    const ledger = report.estimate.components.find((c) => c.component === 'ledger');
    expect(Math.abs((ledger?.keys ?? 0) - (truth.get('ledger')?.keys ?? 0)) / 200_010).toBeLessThan(0.05);
  });

  it('warns, saying what to set, when Redis has no maxmemory', async () => {
    await redis.config('SET', 'maxmemory', '0');
    try {
      const res = await stats();
      expect(res.code).toBe(0);
      expect(res.out).toContain('used with no maxmemory set, policy noeviction');
      expect(res.out).toMatch(/^WARNING +Redis has no maxmemory: set `maxmemory <bytes>`/m);
    } finally {
      await redis.config('SET', 'maxmemory', String(4 * 1024 ** 3));
    }
  });

  it('refuses a bad --samples with exit code 2 and the usage', async () => {
    for (const bad of ['0', 'many', '1.5', '50001']) {
      const res = await stats('--samples', bad);
      expect(res.code).toBe(2);
      expect(res.out).toContain('--samples must be an integer from 1 to 50000');
      expect(res.out).toContain('usage: tickwork stats');
    }
  });
});
