/**
 * Issue 37 §2: `tickwork` never hangs on a frozen Redis. On one Redis frozen (SIGSTOP), `tickwork enqueue`
 * exits non-zero saying Redis did not answer. On a cluster, with the master of the queue's slot
 * frozen (SIGSTOP, no promotion within the test: cluster-node-timeout 120 s), `tickwork enqueue` exits
 * non-zero with an error saying Redis did not answer; with the other masters frozen, it enqueues the job
 * and exits 0. Each within the command deadlines (REDIS_CLUSTER_FAILOVER_MS plus REDIS_COMMAND_TIMEOUT_MS, 1 s
 * here, per command), waited for here with a generous bound, not timed.
 */
import { fileURLToPath } from 'node:url';
import { startApp, startClusterQueues, startRedisServer, waitFor, type ClusterQueues } from '@tickwork/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';

vi.setConfig({ testTimeout: 150_000, hookTimeout: 90_000 });

const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const PREFIX = 'cf';
const EMAIL_KEY = `${PREFIX}:{email}:email:meta`;
let fixture: ClusterQueues;

beforeAll(async () => {
  fixture = await startClusterQueues(PREFIX, { nodeTimeoutMs: 120_000 });
});
afterAll(async () => {
  await fixture?.stop();
});

async function enqueue(to: string, where: Record<string, string> = fixture.cluster.env, failoverMs = '5000'): Promise<{ code: number | null; out: string }> {
  const payload = JSON.stringify({ to, subject: 's', body: 'b' });
  const app = startApp(CLI, { ...where, QUEUE_PREFIX: PREFIX, LOG_LEVEL: 'silent', REDIS_COMMAND_TIMEOUT_MS: '1000', REDIS_CLUSTER_FAILOVER_MS: failoverMs }, ['enqueue', 'email.send', payload]);
  try {
    const code = await waitFor(async () => (app.proc.exitCode !== null || app.proc.signalCode !== null ? { code: app.proc.exitCode } : undefined), {
      timeoutMs: 90_000,
      what: '`tickwork enqueue` to exit',
    });
    return { code: code.code, out: app.lines.join('\n') };
  } finally {
    await app.stop('SIGKILL');
  }
}

it("exits non-zero with a clear error when the queue's master is frozen", async () => {
  const master = await fixture.cluster.masterOf(EMAIL_KEY);
  master.pause();
  try {
    const { code, out } = await enqueue('frozen@example.com');
    expect(code).toBe(1);
    expect(out).toMatch(/did not answer within \d+ ms/);
  } finally {
    master.resume();
  }
});

it('enqueues and exits 0 when the other masters are frozen', async () => {
  const master = await fixture.cluster.masterOf(EMAIL_KEY);
  const views = await Promise.all(fixture.cluster.nodes.map(async (n) => ({ n, role: (await n.client().role()) as unknown[] })));
  const otherMasters = views.filter((v) => v.role[0] === 'master' && v.n.port !== master.port).map((v) => v.n);
  expect(otherMasters).toHaveLength(2);
  for (const n of otherMasters) n.pause();
  try {
    // The default failover budget (30 s): keyless commands (the cluster's ready check, BullMQ's INFO) go to a
    // random master, two in three of them frozen here, and are sent again to another within the budget.
    const { code, out } = await enqueue('live@example.com', fixture.cluster.env, '30000');
    expect({ code, out: code === 0 ? '' : out }).toEqual({ code: 0, out: '' });
  } finally {
    for (const n of otherMasters) n.resume();
  }
  const waiting = await fixture.queues.get('email').getWaiting();
  expect(waiting.map((j) => (j.data as { to: string }).to)).toContain('live@example.com');
});

it('exits non-zero with a clear error when one Redis is frozen', async () => {
  const server = await startRedisServer();
  try {
    server.pause();
    const { code, out } = await enqueue('single@example.com', { REDIS_URL: server.url });
    expect(code).toBe(1);
    expect(out).toMatch(/Redis did not answer within 1000 ms \(REDIS_COMMAND_TIMEOUT_MS\)/);
  } finally {
    await server.stop();
  }
});
