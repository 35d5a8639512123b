import type { Server } from 'node:http';
import { catalog } from '@tickwork/jobs';
import { createLogger, QueueSet, type Logger, type RedisClient } from '@tickwork/core';
import { hashPassword, moveToDeadLetter, parsePasswordHash } from '@tickwork/operations';
import { startTestRedis, waitFor, type TestRedis, type Topology } from '@tickwork/testkit';
import { Worker } from 'bullmq';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { createDashboardApp, type DashboardDeps } from '../app.js';
import { plainAdmin, type DashboardUser } from '../users.js';

export const USER = 'ops';
export const PASSWORD = 'correct-horse';
export const basicHeader = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
/** The DASHBOARD_USER/DASHBOARD_PASSWORD admin. */
export const AUTH = basicHeader(USER, PASSWORD);
/** A DASHBOARD_USERS viewer and a DASHBOARD_USERS admin (scrypt hashes, cheap cost for tests). */
export const VIEWER = 'watcher';
export const VIEWER_PASSWORD = 'just-looking';
export const VIEWER_AUTH = basicHeader(VIEWER, VIEWER_PASSWORD);
export const HASHED_ADMIN = 'alice';
export const HASHED_ADMIN_PASSWORD = 'alice-in-charge';
export const HASHED_ADMIN_AUTH = basicHeader(HASHED_ADMIN, HASHED_ADMIN_PASSWORD);

async function testUsers(): Promise<DashboardUser[]> {
  const hashed = async (password: string) => parsePasswordHash(await hashPassword(password, { N: 1024, r: 8, p: 1 }));
  return [
    plainAdmin(USER, PASSWORD),
    { name: VIEWER, role: 'viewer', password: { kind: 'scrypt', hash: await hashed(VIEWER_PASSWORD) } },
    { name: HASHED_ADMIN, role: 'admin', password: { kind: 'scrypt', hash: await hashed(HASHED_ADMIN_PASSWORD) } },
  ];
}

export interface TestDashboard {
  base: string;
  /** `host:port` the browser would send as Host. */
  origin: string;
  prefix: string;
  /** The private Redis (one server, or a cluster) the dashboard reads. */
  target: TestRedis;
  redis: RedisClient;
  queues: QueueSet;
  /** GET with credentials. */
  get(path: string): Promise<Response>;
  /** POST a form with credentials (the admin's, unless headers carry others) and the given extra headers; redirects are not followed. */
  post(path: string, form: Record<string, string>, headers?: Record<string, string>): Promise<Response>;
  /** Empties Redis (every master of a cluster). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** Login settings a test may change: the throttle's limits, the password check, trusted proxies. */
export type LoginSettings = Pick<DashboardDeps, 'loginThrottle' | 'auth' | 'trustedProxies'>;

/** The real express app on port 0 against a private redis-server (or Redis Cluster), as main.ts wires it. */
export async function startDashboard(prefix = 'tw', log: Logger = createLogger('test', 'silent'), topology: Topology = 'standalone', login: LoginSettings = {}): Promise<TestDashboard> {
  const target = await startTestRedis(topology);
  const redis = target.client();
  const queues = new QueueSet(redis, prefix, log);
  const app = await createDashboardApp({ catalog, queues, redis, log, users: await testUsers(), ...login });
  const http: Server = app.listen(0);
  await new Promise((r) => http.once('listening', r));
  const addr = http.address();
  const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  return {
    base,
    origin: base,
    prefix,
    target,
    redis,
    queues,
    get: (path) => fetch(`${base}${path}`, { headers: AUTH }),
    post: (path, form, headers = {}) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: { ...AUTH, 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams(form).toString(),
        redirect: 'manual',
      }),
    flush: () => target.flush(),
    async close() {
      http.closeAllConnections();
      await new Promise((r) => http.close(r));
      await queues.close();
      await target.stop();
    },
  };
}

/**
 * Puts one finally-failed email.send job (id `jobId`) into the email DLQ, as a worker would leave it;
 * returns its DLQ id.
 */
export async function deadLetterEmail(d: TestDashboard, jobId: string, opts: { reason?: string; body?: string } = {}): Promise<string> {
  const worker = new Worker('email', null, { connection: d.target.client(), prefix: d.queues.keyspace('email').bullPrefix });
  await d.queues.get('email').add('email.send', { to: 'a@example.com', subject: 'hi', body: opts.body ?? jobId }, { jobId, attempts: 1 });
  const job = await waitFor(() => worker.getNextJob(`tok-${jobId}`), { what: 'take job' });
  await job.moveToFailed(new Error(opts.reason ?? 'smtp down'), `tok-${jobId}`);
  await worker.close();
  const failed = await d.queues.get('email').getJob(jobId);
  if (!failed) throw new Error(`job ${jobId} vanished before it could be dead-lettered`);
  const moved = await moveToDeadLetter({ job: failed, queues: d.queues, redis: d.redis, catalog });
  if (!moved) throw new Error(`job ${jobId} was not dead-lettered`);
  return moved.deadLetter.dlqJobId;
}

/**
 * One dashboard (and its private Redis) for a test file, emptied before each test: `use` gets it once it
 * has started. Registers the file's hooks, so call it at the top level of the test file.
 */
export function useDashboardPerFile(use: (d: TestDashboard) => void): void {
  let started: TestDashboard | undefined;
  beforeAll(async () => {
    started = await startDashboard();
    use(started);
  });
  afterAll(async () => {
    await started?.close();
  });
  beforeEach(async () => {
    await started?.flush();
  });
}
