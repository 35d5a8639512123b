/**
 * The audit log against refusal floods: refused requests (a viewer's, another site's page using an admin's
 * login) are counted apart and never push an action out; actions are kept by age; a cancel names its job and
 * reason. Real HTTP against the real app and a private redis-server.
 */
import { auditFields, auditKey, recordAction, type AuditAction, type AuditEntry, type RefusalCounts } from '@tickwork/operations';
import { describe, expect, it } from 'vitest';
import { HASHED_ADMIN, HASHED_ADMIN_AUTH, useDashboardPerFile, VIEWER, VIEWER_AUTH, type TestDashboard } from './testing/dashboard-server.js';

let d: TestDashboard;
useDashboardPerFile((started) => (d = started));

type Page = { entries: AuditEntry[]; next: string | null };
const api = async <T>(path: string): Promise<T> => (await (await d.get(path)).json()) as T;

async function csrfToken(): Promise<string> {
  const page = await (await fetch(`${d.base}/jobs?queue=email`, { headers: HASHED_ADMIN_AUTH })).text();
  const token = /name="_csrf" value="([^"]+)"/.exec(page)?.[1];
  if (!token) throw new Error("no CSRF token on an admin's /jobs page");
  return token;
}

/** Sends `n` requests, `width` at a time, and returns their statuses. */
async function flood(n: number, send: (i: number) => Promise<Response>, width = 25): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i += width) {
    const batch = await Promise.all(Array.from({ length: Math.min(width, n - i) }, (_, j) => send(i + j)));
    for (const res of batch) {
      statuses.push(res.status);
      await res.arrayBuffer();
    }
  }
  return statuses;
}

describe('the audit log', () => {
  it("records a cancel with its job id and reason, and keeps it through 1,100 refused viewer requests and 200 another site's page sent with an admin's login", { timeout: 180_000 }, async () => {
    await d.queues.get('email').add('email.send', { to: 'a@example.com', subject: 's', body: 'b' }, { jobId: 'mail-1', delay: 60_000 });
    const token = await csrfToken();
    const cancel = await fetch(`${d.base}/jobs/email/cancel`, {
      method: 'POST',
      headers: { ...HASHED_ADMIN_AUTH, origin: d.origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: token, jobId: 'mail-1', reason: 'sent twice' }).toString(),
      redirect: 'manual',
    });
    expect(cancel.status).toBe(303);
    await expect.poll(async () => (await api<Page>('/api/audit')).entries.length, { timeout: 10_000 }).toBe(1);

    const viewer = await flood(1100, () =>
      fetch(`${d.base}/jobs/email/cancel`, { method: 'POST', headers: { ...VIEWER_AUTH, origin: d.origin, 'content-type': 'application/x-www-form-urlencoded' }, body: 'jobId=mail-1' }),
    );
    expect(new Set(viewer)).toEqual(new Set([403]));
    // What a page on another port makes an admin's browser send: her login, that page's origin.
    const elsewhere = `http://127.0.0.1:${Number(new URL(d.base).port) + 1}`;
    const crossSite = await flood(200, (i) => fetch(`${d.base}/queues/api/queues/email/${i % 2 ? 'pause' : 'resume'}`, { method: 'PUT', headers: { ...HASHED_ADMIN_AUTH, origin: elsewhere } }));
    expect(new Set(crossSite)).toEqual(new Set([403]));
    expect(await d.queues.get('email').isPaused()).toBe(false);

    // Every refusal is counted (the writes follow the responses: wait for the last of them).
    await expect.poll(async () => (await api<{ last24h: RefusalCounts }>('/api/audit/refused')).last24h.total, { timeout: 30_000 }).toBe(1300);
    // Newest first: the other site's 200, then the viewer's (sent before them on the same connection).
    const refused = await api<{ last24h: RefusalCounts } & Page>('/api/audit/refused?limit=200');
    expect(refused.entries).toHaveLength(200);
    expect(refused.entries.every((e) => e.user === HASHED_ADMIN && e.role === 'admin' && e.method === 'PUT' && e.status === 403)).toBe(true);
    const older = await api<Page>(`/api/audit/refused?limit=1&before=${refused.next ?? ''}`);
    expect(older.entries).toEqual([expect.objectContaining({ user: VIEWER, role: 'viewer', method: 'POST', target: '/jobs/email/cancel', status: 403 })]);
    // The capped stream of refusals holds about the last 1,000, not all 1,300.
    expect(await d.redis.xlen(`${d.prefix}:meta:audit-refused`)).toBeLessThan(1300);

    // The audit log still holds the admin's cancel, alone, with what it cancelled and why.
    const audit = await api<Page>('/api/audit');
    expect(audit.next).toBeNull();
    expect(audit.entries).toEqual([
      expect.objectContaining({
        source: 'dashboard',
        user: HASHED_ADMIN,
        role: 'admin',
        method: 'POST',
        target: '/jobs/email/cancel',
        status: 303,
        detail: { jobId: 'mail-1', reason: 'sent twice', outcome: 'cancel-requested' },
      }),
    ]);
    const page = await (await d.get('/audit')).text();
    expect(page).toMatch(/<span class="muted">jobId<\/span> mail-1<br><span class="muted">reason<\/span> sent twice/);
    expect(page).toContain('<a href="/audit/refused">1300 in the last 24 hours</a>');
    const refusedPage = await (await d.get('/audit/refused')).text();
    expect(refusedPage).toContain('<span id="refused-total">1300</span>');
  });

  it('keeps actions by age: one older than 90 days goes at the next write, a younger one stays', async () => {
    // One entry per stream node, so MINID's whole-node trimming is exact here.
    await d.redis.config('SET', 'stream-node-max-entries', '1');
    try {
      const day = 86_400_000;
      const key = auditKey(d.prefix);
      await d.redis.xadd(key, `${Date.now() - 91 * day}-0`, 'source', 'dashboard', 'user', 'old', 'target', '/old');
      await d.redis.xadd(key, `${Date.now() - 89 * day}-0`, 'source', 'dashboard', 'user', 'recent', 'target', '/recent');
      await recordAction(d.redis, d.prefix, { source: 'cli', user: 'ann', role: null, host: 'box', method: null, target: 'tickwork enqueue', status: null, detail: { job: 'email.send' } });
      const users = (await api<Page>('/api/audit')).entries.map((e) => e.user);
      expect(users).toEqual(['ann', 'recent']);
    } finally {
      await d.redis.config('SET', 'stream-node-max-entries', '100');
    }
  });

  it('stores a typical action in under 180 bytes (docs/capacity.md)', async () => {
    // A typical action: a cancel from the dashboard, with its job id, reason and outcome; written as recordAction writes it.
    const n = 2000;
    const cancel = (i: number): AuditAction => ({ source: 'dashboard', user: HASHED_ADMIN, role: 'admin', host: null, method: 'POST', target: '/jobs/email/cancel', status: 303, detail: { jobId: `mail-${i}`, reason: 'sent twice', outcome: 'cancel-requested' } });
    const pipeline = d.redis.pipeline();
    for (let i = 0; i < n; i++) pipeline.xadd(auditKey(d.prefix), '*', ...auditFields(cancel(i)));
    await pipeline.exec();
    await recordAction(d.redis, d.prefix, cancel(n));
    const bytes = Number(await d.redis.memory('USAGE', auditKey(d.prefix), 'SAMPLES', '0'));
    expect(bytes / (n + 1)).toBeLessThan(180);
  });
});
