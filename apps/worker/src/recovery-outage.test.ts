/**
 * Recovery's outage protection, with the default settings (heartbeat 1 s, dead after 5 s): when the whole
 * worker registry falls silent for longer than the dead-after time (Redis frozen, or every worker frozen or
 * cut off), every process looks silent to the first one back until the others beat again. No one may take
 * back a live process's job then: the registry counts nobody dead until it has been beaten again for the
 * dead-after time (docs/internals.md, The reaper and stalls). Real worker processes; a run waits at its gate
 * on one of them, past a recorded step, through the silence.
 */
import { createExactlyOnce } from '@tickwork/exactly-once';
import { createLogger, jobOptions, LIVE_SINCE_MEMBER, QueueSet, workersKey } from '@tickwork/core';
import { appEntry, fixtureModule, freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { gated, RC_KEYS, RC_QUEUE } from '@tickwork/testkit/fixtures/recovery-catalog';

const DEAD_AFTER_MS = 5000;

let server: RedisServerHandle;
let redis: Redis;
let queues: QueueSet;
let redisPid: number;
let apps: AppProcess[] = [];

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
  queues = new QueueSet(redis, 'tickwork', createLogger('test', 'silent'));
  redisPid = Number(/^process_id:(\d+)/m.exec(await redis.info('server'))?.[1]);
});
afterEach(async () => {
  process.kill(redisPid, 'SIGCONT');
  for (const a of apps) a.proc.kill('SIGCONT');
  await Promise.all(apps.map((a) => a.stop('SIGKILL')));
  apps = [];
});
afterAll(async () => {
  await queues?.close();
  await server?.stop();
});

const startWorker = async (): Promise<AppProcess> => {
  const app = startApp(appEntry('worker'), {
    REDIS_URL: server.url,
    JOBS_MODULE: fixtureModule('recovery-catalog'),
    WORKER_QUEUES: RC_QUEUE,
    PORT: String(await freePort()),
    LOG_LEVEL: 'info',
    // What is tested is the registry's judgement over a whole-registry silence. With the default command
    // deadline (5 s), the gated handler's own Redis reads during a 10 s freeze would fail its attempt, which
    // is retried as any failed attempt is (silent-queue.test.ts, docs/operations.md): a deadline longer than
    // the freeze keeps this test on the registry alone.
    REDIS_COMMAND_TIMEOUT_MS: '30000',
  });
  apps.push(app);
  await app.waitForLog((l) => l.msg === 'worker ready', 'worker ready');
  return app;
};
const redisNow = async () => {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
};
const list = (key: string) => redis.lrange(key, 0, -1);
const TAKEN_BACK = /^took back a job whose worker stopped beating$|^took over a run whose holder stopped renewing its lease$/;

/** Two workers and a run of `gate` waiting at its gate on one of them, its step recorded. */
async function runAtGate(gate: string) {
  await Promise.all([startWorker(), startWorker()]);
  const job = await queues.get(RC_QUEUE).add(gated.name, { gate }, jobOptions(gated));
  await waitFor(async () => (await redis.llen(RC_KEYS.waiting(gate))) >= 1, { what: `${gate} at its gate` });
  const steps = createExactlyOnce(redis, { prefix: 'tickwork' }).ledger.stepsKeyOf(`${job.name}#${job.id}`);
  await waitFor(async () => (await redis.hexists(steps, 'prepare')) === 1, { what: 'its step recorded' });
  return { job, holder: Number((await list(RC_KEYS.starts(gate)))[0]) };
}

/**
 * After the silence: waits until both workers have beaten again and the registry has been beaten for the
 * dead-after time since (its outage mark set and gone), the whole window in which a wrong judgement would
 * have been made; then checks that no job was taken back and the run ends on its holder, once.
 */
async function expectNothingTakenBack(gate: string, job: { id?: string | undefined; getState(): Promise<string> }, holder: number, back: number) {
  const beatSince = async () => {
    const flat = (await redis.zrange(workersKey('tickwork'), '0', '-1', 'WITHSCORES')) as unknown as string[];
    return flat.filter((score, i) => i % 2 === 1 && String(flat[i - 1]).startsWith('p:') && Number(score) >= back).length;
  };
  await waitFor(async () => (await beatSince()) >= 2, { timeoutMs: 30_000, what: 'both workers beating again' });
  await waitFor(async () => (await redisNow()) - back > DEAD_AFTER_MS + 2000 && (await redis.zscore(workersKey('tickwork'), LIVE_SINCE_MEMBER)) === null, {
    timeoutMs: 30_000,
    what: 'the registry beaten again for the dead-after time',
  });
  expect(apps.flatMap((a) => a.logs().filter((l) => TAKEN_BACK.test(String(l.msg))))).toEqual([]);
  await redis.set(RC_KEYS.gate(gate), '1');
  await waitFor(async () => (await job.getState()) === 'completed', { what: 'the run completed' });
  expect(await list(RC_KEYS.starts(gate))).toEqual([String(holder)]);
  expect(await list(RC_KEYS.effects(gate))).toEqual([String(holder)]);
  expect((await queues.get(RC_QUEUE).getJob(job.id as string))?.stalledCounter).toBe(0);
}

it('every worker frozen (SIGSTOP) past the dead-after time, then resumed: neither takes back the other\'s job', async () => {
  const { job, holder } = await runAtGate('all-frozen');
  const lastBeat = await redisNow();
  for (const a of apps) a.proc.kill('SIGSTOP');
  await waitFor(async () => (await redisNow()) - lastBeat > 2 * DEAD_AFTER_MS, { timeoutMs: 30_000, intervalMs: 200, what: 'twice the dead-after time frozen' });
  const back = await redisNow();
  for (const a of apps) a.proc.kill('SIGCONT');
  await expectNothingTakenBack('all-frozen', job, holder, back);
}, 120_000);

it('Redis frozen (SIGSTOP) past the dead-after time, then resumed: no worker takes back another\'s job', async () => {
  const { job, holder } = await runAtGate('redis-frozen');
  process.kill(redisPid, 'SIGSTOP');
  // Redis answers nothing meanwhile, so this waits on the test's own clock (the machine's, as Redis's).
  const frozenAt = Date.now();
  await waitFor(() => Date.now() - frozenAt > 2 * DEAD_AFTER_MS, { timeoutMs: 30_000, intervalMs: 200, what: 'twice the dead-after time frozen' });
  process.kill(redisPid, 'SIGCONT');
  await expectNothingTakenBack('redis-frozen', job, holder, await redisNow());
}, 120_000);
