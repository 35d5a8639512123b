import { TOPOLOGIES } from '@tickwork/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH, basicHeader as auth, startDashboard, type TestDashboard } from './testing/dashboard-server.js';

/** Bull Board's JSON for one queue's page of jobs in `status`. */
interface BoardQueue {
  name: string;
  counts: Record<string, number>;
  jobs: { id: string }[];
  pagination: { pageCount: number };
}

// Every test on one Redis; on a Redis Cluster the ones that read queues (Bull Board's listing and pages).
describe.each(TOPOLOGIES)('dashboard on %s Redis', (topology) => {
  let d: TestDashboard;
  let base: string;

  // A Redis Cluster's start (six servers, then the slots' assignment) took past 60 s once, with other
  // packages' tests loading the machine: two minutes, as the other cluster suites allow.
  beforeAll(async () => {
    d = await startDashboard('tickwork', undefined, topology);
    base = d.base;
  }, 120_000);
  afterAll(async () => {
    await d?.close();
  });

  if (topology === 'standalone') {
    it('answers /healthz without credentials', async () => {
      const res = await fetch(`${base}/healthz`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: 'ok' });
    });

    it.each(['/', '/queues', '/queues/api/queues', '/anything'])('requires credentials for %s', async (path) => {
      const res = await fetch(`${base}${path}`, { redirect: 'manual' });
      expect(res.status).toBe(401);
      expect((await fetch(`${base}${path}`, { headers: auth('ops', 'wrong-password'), redirect: 'manual' })).status).toBe(401);
      expect((await fetch(`${base}${path}`, { headers: auth('admin', 'correct-horse'), redirect: 'manual' })).status).toBe(401);
    });
  }

  it('shows every catalog queue and its dead-letter queue to a logged-in operator', async () => {
    const res = await fetch(`${base}/queues/api/queues`, { headers: auth('ops', 'correct-horse') });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { queues: { name: string }[] };
    expect(body.queues.map((q) => q.name).sort()).toEqual(
      ['billing', 'billing.dlq', 'email', 'email.dlq', 'maintenance', 'maintenance.dlq', 'reports', 'reports.dlq'].sort(),
    );
  });

  it("pages a queue's jobs in Bull Board: counts and each page read from the queue's own keys", async () => {
    const email = d.queues.get('email');
    await email.addBulk(Array.from({ length: 25 }, (_, i) => ({ name: 'email.send', data: { to: 'a@example.com', subject: `s${i}`, body: 'b' }, opts: { jobId: `board-${i}` } })));
    const page = async (n: number) => {
      const res = await fetch(`${base}/queues/api/queues?activeQueue=email&status=waiting&page=${n}&jobsPerPage=10`, { headers: AUTH });
      expect(res.status).toBe(200);
      const queue = ((await res.json()) as { queues: BoardQueue[] }).queues.find((q) => q.name === 'email');
      return { count: queue?.counts.waiting, pages: queue?.pagination.pageCount, ids: queue?.jobs.map((j) => j.id) ?? [] };
    };
    const pages = await Promise.all([1, 2, 3].map(page));
    expect(pages.map((p) => [p.count, p.pages, p.ids.length])).toEqual([[25, 3, 10], [25, 3, 10], [25, 3, 5]]);
    // Newest first, every job exactly once across the pages.
    expect(pages.flatMap((p) => p.ids)).toEqual(Array.from({ length: 25 }, (_, i) => `board-${24 - i}`));
  });
});
