/**
 * The per-user schedule example end to end: the producer upserts each user's schedule, a real scheduler
 * and worker fire them, and digest.user sends each user's digest once per occurrence.
 */
import { createLogger, QueueSet } from '@tickwork/core';
import { createSchedules, readHistory, type Schedules } from '@tickwork/schedules';
import { appEntry, freePort, REPO_ROOT, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_DIGEST_USERS, DEMO_KEYS } from '../demo-data.js';
import { catalog } from '../index.js';
import { scheduleUserDigest, unscheduleUserDigest, userDigestScheduleId } from './user-schedules.js';

const PREFIX = 'peruser';
let server: RedisServerHandle;
let queues: QueueSet;
let schedules: Schedules;
const apps: AppProcess[] = [];

beforeAll(async () => {
  server = await startRedisServer();
  queues = new QueueSet(server.client(), PREFIX, createLogger('test', 'silent'));
  schedules = createSchedules({ redis: server.client(), queues, catalog });
});
afterAll(async () => {
  await Promise.all(apps.map((a) => a.stop('SIGKILL')));
  await queues?.close();
  await server?.stop();
});

/** The digests sent to one user: the occurrence (from the run's idempotency key) of each. */
async function digestsOf(userId: string): Promise<string[]> {
  const sent = (await server.client().lrange(DEMO_KEYS.outbox, 0, -1)).map((e) => JSON.parse(e) as { idempotencyKey: string });
  const prefix = `${userDigestScheduleId(userId)}@`;
  return sent.filter((e) => e.idempotencyKey.startsWith(prefix)).map((e) => e.idempotencyKey.slice(prefix.length));
}

describe('one runtime schedule per user (digest.user)', { timeout: 180_000 }, () => {
  it('the producer script creates each demo user\'s 09:00 schedule in her timezone; a second run changes nothing', async () => {
    const script = resolve(REPO_ROOT, 'packages/jobs/dist/examples/schedule-demo-users.js');
    const env = { REDIS_URL: server.url, QUEUE_PREFIX: 'script' };
    const first = startApp(script, env);
    expect(await first.exited).toBe(0);
    expect(first.lines.filter((l) => l.startsWith('created digest.user:user-'))).toHaveLength(DEMO_DIGEST_USERS.length);
    const again = startApp(script, env);
    expect(await again.exited).toBe(0);
    expect(again.lines.filter((l) => l.startsWith('unchanged '))).toHaveLength(DEMO_DIGEST_USERS.length);
    const scriptQueues = new QueueSet(server.client(), 'script', createLogger('test', 'silent'));
    const store = createSchedules({ redis: server.client(), queues: scriptQueues, catalog });
    const kathmandu = DEMO_DIGEST_USERS.find((u) => u.tz === 'Asia/Kathmandu');
    expect(await store.get(userDigestScheduleId(kathmandu?.id ?? ''))).toMatchObject({ job: 'digest.user', pattern: '0 9 * * *', tz: 'Asia/Kathmandu', data: { userId: kathmandu?.id } });
    expect(await store.count({ job: 'digest.user' })).toBe(DEMO_DIGEST_USERS.length);
    await scriptQueues.close();
  });

  it('fires each user\'s schedule through a real scheduler and worker, one digest per occurrence; a changed, removed or paused schedule stops firing the old way, a resumed one fires again', async () => {
    const env = { REDIS_URL: server.url, QUEUE_PREFIX: PREFIX, LOG_LEVEL: 'info' };
    apps.push(startApp(appEntry('scheduler'), { ...env, PORT: String(await freePort()) }), startApp(appEntry('worker'), { ...env, PORT: String(await freePort()) }));
    await Promise.all([apps[0]?.waitForLog((l) => l.msg === 'scheduler ready', 'scheduler ready'), apps[1]?.waitForLog((l) => l.msg === 'worker ready', 'worker ready')]);
    const [ann, bob, cleo, dave] = DEMO_DIGEST_USERS;
    if (!ann || !bob || !cleo || !dave) throw new Error('demo users missing');
    // Every second instead of 09:00, so the test sees several occurrences.
    for (const user of [ann, bob, cleo, dave]) expect((await scheduleUserDigest(schedules, user, '* * * * * *')).created).toBe(true);

    const annDigests = await waitFor(async () => ((await digestsOf(ann.id)).length >= 3 ? digestsOf(ann.id) : undefined), { timeoutMs: 30_000, what: "3 of ann's digests" });
    expect(new Set(annDigests).size).toBe(annDigests.length); // one per occurrence
    for (const at of annDigests) expect(at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);
    const history = await readHistory(server.client(), PREFIX, userDigestScheduleId(ann.id), 5);
    expect(history.filter((h) => h.outcome === 'completed').length).toBeGreaterThan(0);

    // Bob deletes his account; Ann moves her digest back to 09:00 (her next occurrence is then up to a day
    // away); Cleo pauses hers.
    expect(await unscheduleUserDigest(schedules, bob.id)).toBe(true);
    const removedAt = new Date().toISOString();
    expect((await scheduleUserDigest(schedules, ann)).changed).toBe(true);
    const changedAt = new Date().toISOString();
    expect(await schedules.pause(userDigestScheduleId(cleo.id), 'on holiday')).toBe(true);
    const pausedAt = new Date().toISOString();
    // Dave's schedule fires twice more: time enough for any occurrence of the others that survived.
    const daveCount = (await digestsOf(dave.id)).length;
    await waitFor(async () => (await digestsOf(dave.id)).length >= daveCount + 2, { timeoutMs: 20_000, what: "two more of dave's digests" });
    expect((await digestsOf(bob.id)).filter((at) => at > removedAt)).toEqual([]);
    expect((await digestsOf(ann.id)).filter((at) => at > changedAt)).toEqual([]);
    expect((await digestsOf(cleo.id)).filter((at) => at > pausedAt)).toEqual([]);
    const cleoHistory = await readHistory(server.client(), PREFIX, userDigestScheduleId(cleo.id), 5);
    expect(cleoHistory.some((h) => h.outcome === 'skipped-paused')).toBe(true);

    // Resumed, Cleo's schedule fires again from its next occurrence.
    expect(await schedules.resume(userDigestScheduleId(cleo.id))).toBe(true);
    const resumedAt = new Date().toISOString();
    await waitFor(async () => (await digestsOf(cleo.id)).some((at) => at > resumedAt), { timeoutMs: 20_000, what: "cleo's digest after resume" });
  });
});
