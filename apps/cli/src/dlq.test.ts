import { fileURLToPath } from 'node:url';
import { catalog } from '@tickwork/jobs';
import { createLogger, QueueSet } from '@tickwork/core';
import { listDeadLetters, moveToDeadLetter, redrivenJobId } from '@tickwork/operations';
import { fillDeadLetters, filledEntryOf, type FillOptions } from '@tickwork/bullmq-engine/testing';
import { startApp, startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));
let redisServer: RedisServerHandle;
let redis: Redis;
let queues: QueueSet;

/** Runs `tickwork <args>` as a real process; resolves with exit code, all output lines, and stdout as JSON. */
async function tickwork(...args: string[]): Promise<{ code: number | null; out: string; json: () => unknown }> {
  const app = startApp(CLI, { REDIS_URL: redisServer.url, QUEUE_PREFIX: 'tw', LOG_LEVEL: 'silent' }, args);
  let stdout = '';
  app.proc.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  const code = await app.exited;
  return { code, out: app.lines.join('\n'), json: () => JSON.parse(stdout) as unknown };
}

/** Puts one failed email.send job into the email DLQ, as a worker would. */
async function deadLetter(jobId: string): Promise<string> {
  const worker = new Worker('email', null, { connection: redisServer.client(), prefix: 'tw' });
  await queues.get('email').add('email.send', { to: 'a@example.com', subject: 'hi', body: jobId }, { jobId, attempts: 1 });
  const job = await waitFor(() => worker.getNextJob(`tok-${jobId}`), { what: 'take job' });
  await job.moveToFailed(new Error('smtp down'), `tok-${jobId}`);
  await worker.close();
  const moved = await moveToDeadLetter({ job: (await queues.get('email').getJob(jobId))!, queues, redis, catalog });
  return moved?.deadLetter.dlqJobId ?? '';
}

beforeAll(async () => {
  redisServer = await startRedisServer();
  redis = redisServer.client();
  queues = new QueueSet(redis, 'tw', createLogger('test', 'silent'));
});
afterAll(async () => {
  await queues?.close();
  await redisServer?.stop();
});

describe('tickwork dlq', () => {
  it('list, show, redrive --dry-run, redrive --job, purge --all', async () => {
    const a = await deadLetter('mail-1');
    const b = await deadLetter('mail-2');

    const list = await tickwork('dlq', 'list', '--json');
    expect(list.code).toBe(0);
    expect((list.json() as { entries: unknown }).entries).toEqual([
      expect.objectContaining({ queue: 'email', dlqJobId: a, job: 'email.send', reason: 'smtp down', attempts: 1 }),
      expect.objectContaining({ queue: 'email', dlqJobId: b }),
    ]);
    const text = await tickwork('dlq', 'list', '--queue', 'email');
    expect(text.out).toContain(a);
    expect(text.out).toContain('smtp down');

    const show = await tickwork('dlq', 'show', '--queue', 'email', '--job', a, '--json');
    expect(show.json()).toMatchObject({ dlqQueue: 'email.dlq', dlqJobId: a, entry: { originalJobId: 'mail-1', idempotencyKey: 'email.send#mail-1', payload: { body: 'mail-1' } } });

    const dry = await tickwork('dlq', 'redrive', '--queue', 'email', '--all', '--dry-run', '--json');
    expect(dry.json()).toMatchObject({ dryRun: true, done: 0, skipped: 2, total: 2, remaining: 2, finished: true });
    expect(await listDeadLetters(queues, 'email')).toHaveLength(2);

    const one = await tickwork('dlq', 'redrive', '--queue', 'email', '--job', a, '--json');
    expect(one.code).toBe(0);
    const newId = (one.json() as { redriven: { newJobId: string }[] }).redriven[0]?.newJobId ?? '';
    const redriven = await queues.get('email').getJob(newId);
    expect(redriven?.data).toEqual({ to: 'a@example.com', subject: 'hi', body: 'mail-1' });
    expect(redriven?.opts.attempts).toBe(catalog.require('email.send').retry?.attempts ?? 3);
    expect((await listDeadLetters(queues, 'email')).map((d) => d.dlqJobId)).toEqual([b]);

    const purge = await tickwork('dlq', 'purge', '--queue', 'email', '--all', '--json');
    expect(purge.json()).toMatchObject({ done: 1, total: 1, remaining: 0, finished: true });
    expect(await listDeadLetters(queues, 'email')).toEqual([]);
  });

  it('a job something else put in a DLQ: listed as not a tickwork entry, skipped by redrive --all, purged by purge --all', async () => {
    await redis.flushdb(); // the test above left a re-driven job waiting, which deadLetter() would take
    const good = await deadLetter('mail-3');
    const blank = String((await queues.get('email.dlq').add('', undefined)).id);

    const list = await tickwork('dlq', 'list', '--json');
    expect(list.code).toBe(0);
    expect((list.json() as { entries: unknown }).entries).toEqual([
      expect.objectContaining({ dlqJobId: good, tickwork: true }),
      expect.objectContaining({ dlqJobId: blank, job: '', tickwork: false, reason: expect.stringMatching(/^not a tickwork dead letter \(/) }),
    ]);
    const text = await tickwork('dlq', 'list');
    expect(text.code).toBe(0);
    expect(text.out).toContain('not a tickwork dead letter');
    const show = await tickwork('dlq', 'show', '--queue', 'email', '--job', blank, '--json');
    expect(show.code).toBe(0);
    expect(show.json()).toMatchObject({ dlqJobId: blank, entry: null, foreign: { name: '' } });

    const redrive = await tickwork('dlq', 'redrive', '--queue', 'email', '--all');
    expect(redrive.code).toBe(0);
    expect(redrive.out).toContain(`skipped ${blank}: not a tickwork dead letter`);
    expect(await queues.get('email').getJob(redrivenJobId(good, 1))).toBeTruthy();

    const purge = await tickwork('dlq', 'purge', '--queue', 'email', '--all', '--json');
    expect(purge.code).toBe(0);
    expect(purge.json()).toMatchObject({ done: 1, remaining: 0 });
    expect(await queues.get('email.dlq').getJobCountByTypes('waiting', 'delayed', 'prioritized')).toBe(0);
  });

  it('bad input: usage errors with exit code 2 and a message that says what to do', async () => {
    const noSelector = await tickwork('dlq', 'redrive', '--queue', 'email');
    expect(noSelector.code).toBe(2);
    expect(noSelector.out).toContain('--job <dlq id>');
    expect(noSelector.out).toContain('--all');

    const unknownQueue = await tickwork('dlq', 'redrive', '--queue', 'nope', '--all');
    expect(unknownQueue.code).toBe(2);
    expect(unknownQueue.out).toContain('unknown queue "nope"; known queues: ');
    expect(unknownQueue.out).toContain('email');

    const noQueue = await tickwork('dlq', 'purge', '--all');
    expect(noQueue.code).toBe(2);
    expect(noQueue.out).toContain('--queue is required');

    const both = await tickwork('dlq', 'purge', '--queue', 'email', '--all', '--job', 'x');
    expect(both.code).toBe(2);

    const noAction = await tickwork('dlq');
    expect(noAction.code).toBe(2);
    expect(noAction.out).toContain('missing action');

    const missing = await tickwork('dlq', 'show', '--queue', 'email', '--job', 'does-not-exist');
    expect(missing.code).toBe(1);
    expect(missing.out).toContain('no DLQ entry "does-not-exist" in email.dlq');
  });
});

describe('tickwork dlq with thousands of entries', () => {
  const N = 2_500;
  const fill: FillOptions = { prefix: 'tw', queue: 'email', count: N, jobNames: ['email.send', 'digest.weekly'] };
  const expected = Array.from({ length: N }, (_, i) => filledEntryOf(fill, i));

  it('list pages with --limit and --cursor (every entry once), filters with --name/--reason/--since/--until; bad values are usage errors', async () => {
    await redis.flushdb();
    await fillDeadLetters(redis, fill);
    const seen: string[] = [];
    let cursor: string | null = null;
    let calls = 0;
    do {
      const page = await tickwork('dlq', 'list', '--queue', 'email', '--limit', '500', ...(cursor ? ['--cursor', cursor] : []), '--json');
      expect(page.code).toBe(0);
      const body = page.json() as { entries: { dlqJobId: string }[]; next: string | null; counts: { queue: string; count: number }[] };
      expect(body.counts).toContainEqual({ queue: 'email', count: N });
      seen.push(...body.entries.map((e) => e.dlqJobId));
      cursor = body.next;
      calls += 1;
    } while (cursor && calls < 10);
    expect(calls).toBe(5);
    expect(seen).toEqual(expected.map((e) => e.dlqJobId));

    const filtered = await tickwork('dlq', 'list', '--name', 'email.send', '--reason', 'TimeOut', '--since', expected[100]?.deadLetteredAt ?? '', '--until', '2024-05-01T00:05:00Z', '--json');
    expect(filtered.code).toBe(0);
    // Entries 100..299 (from 00:01:40 to five minutes past midnight); every 10th is a timeout of email.send.
    const want = expected.slice(100, 300).filter((_, i) => i % 10 === 0).map((e) => e.dlqJobId);
    expect(want).toHaveLength(20);
    expect((filtered.json() as { entries: { dlqJobId: string }[] }).entries.map((e) => e.dlqJobId)).toEqual(want);
    const timeouts = await tickwork('dlq', 'list', '--name', 'email.send', '--reason', 'timeout', '--limit', '3');
    expect(timeouts.out).toContain('fill-0');
    expect(timeouts.out).toContain('fill-20');
    expect(timeouts.out).not.toContain('fill-30@');
    expect(timeouts.out).toMatch(/more: add --cursor \S+/);

    for (const [args, message] of [
      [['--limit', '0'], 'limit must be an integer from 1 to 500'],
      [['--since', 'last week'], 'since must be an ISO date'],
      [['--cursor', 'nonsense'], 'invalid cursor'],
      [['--queue', 'nope'], 'unknown queue "nope"'],
    ] as const) {
      const bad = await tickwork('dlq', 'list', ...args);
      expect(bad.code, args.join(' ')).toBe(2);
      expect(bad.out).toContain(message);
    }
  });

  it('redrive --all in batches with progress; stopped by --batches and run again, it finishes and enqueues each entry once', async () => {
    await redis.flushdb();
    await fillDeadLetters(redis, fill);
    const first = await tickwork('dlq', 'redrive', '--queue', 'email', '--all', '--batches', '1');
    expect(first.code).toBe(0);
    expect(first.out).toContain(`re-drove 500 of ${N} in email.dlq`);
    expect(first.out).toContain('run the same command again to continue');
    expect(await queues.get('email').getJobCountByTypes('waiting')).toBe(500);

    const rest = await tickwork('dlq', 'redrive', '--queue', 'email', '--all', '--json');
    expect(rest.code).toBe(0);
    expect(rest.out).toContain(`re-drove 2000 of ${N - 500} in email.dlq`); // the last progress line
    expect(rest.json()).toMatchObject({ done: N - 500, skipped: 0, remaining: 0, finished: true });
    expect(await queues.get('email').getJobCountByTypes('waiting')).toBe(N);
    for (const e of [expected[0], expected[1_234], expected[N - 1]]) expect(await queues.get('email').getJob(redrivenJobId(e?.dlqJobId ?? '', 1))).toBeTruthy();

    const usage = await tickwork('dlq', 'purge', '--queue', 'email', '--job', 'x', '--batches', '2');
    expect(usage.code).toBe(2);
    expect(usage.out).toContain('--batches goes with --all');
  });
});
