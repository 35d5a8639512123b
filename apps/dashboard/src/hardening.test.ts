/**
 * The dashboard against an attacker at the HTTP level: forged state-changing requests (Bull Board's API
 * included), oversized bodies, and the headers that keep job data out of caches and other sites.
 * The browser-level forgery is in browser.test.ts; login throttling in login-throttle.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { AUTH, useDashboardPerFile, type TestDashboard } from './testing/dashboard-server.js';

let d: TestDashboard;
useDashboardPerFile((started) => (d = started));

const waitingIn = (queue: string) => d.queues.get(queue).getJobCountByTypes('waiting', 'delayed', 'prioritized');

describe("Bull Board's API behind the Origin check", () => {
  it('refuses a foreign-origin POST to /queues/api/queues/<queue>/add (the text/plain form attack): nothing is added', async () => {
    const forged: Record<string, string>[] = [{ origin: 'http://evil.example' }, { referer: 'http://evil.example/page' }, {}];
    for (const headers of forged) {
      const res = await fetch(`${d.base}/queues/api/queues/email/add`, {
        method: 'POST',
        headers: { ...AUTH, 'content-type': 'text/plain', ...headers },
        body: '{"name":"x","data":{}}=',
      });
      expect({ headers, status: res.status }).toEqual({ headers, status: 403 });
    }
    for (const queue of ['email', 'email.dlq']) {
      const res = await fetch(`${d.base}/queues/api/queues/${queue}/add`, { method: 'POST', headers: { ...AUTH, origin: 'http://evil.example', 'content-type': 'application/json' }, body: '{}' });
      expect(res.status).toBe(403);
    }
    // Every state-changing method, not only POST.
    for (const [method, path] of [['PUT', '/queues/api/queues/email/pause'], ['PUT', '/queues/api/queues/email/empty'], ['DELETE', '/queues/api/queues/email/x']] as const) {
      expect((await fetch(`${d.base}${path}`, { method, headers: { ...AUTH, origin: 'http://evil.example' } })).status).toBe(403);
    }
    expect(await waitingIn('email')).toBe(0);
    expect(await waitingIn('email.dlq')).toBe(0);
    expect(await d.queues.get('email').isPaused()).toBe(false);
  });

  it("lets the board's own same-origin calls through", async () => {
    const res = await fetch(`${d.base}/queues/api/queues/email/add`, {
      method: 'POST',
      headers: { ...AUTH, origin: d.origin, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'email.send', data: { to: 'a@example.com', subject: 's', body: 'b' } }),
    });
    expect(res.status).toBe(200);
    expect(await waitingIn('email')).toBe(1);
    // Reads need no Origin (a plain navigation sends none).
    expect((await d.get('/queues/api/queues')).status).toBe(200);
  });
});

describe('oversized bodies', () => {
  it("answers 413 to a body over a tickwork action's limit, and nothing else happens", async () => {
    const res = await fetch(`${d.base}/dead-letters/email/redrive-all`, {
      method: 'POST',
      headers: { ...AUTH, origin: d.origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: `_csrf=${'a'.repeat(8 * 1024 * 1024)}`,
    });
    expect(res.status).toBe(413);
  });
});

describe('response headers', () => {
  it('job data is never cached, URLs never leak to other sites, nothing is sniffed, no X-Powered-By', async () => {
    const paths = ['/schedules', '/api/schedules', '/dead-letters', '/api/dead-letters', '/queues/', '/queues/api/queues', '/nowhere'];
    for (const path of paths) {
      const res = await d.get(path);
      const h = Object.fromEntries(['cache-control', 'etag', 'referrer-policy', 'x-content-type-options', 'x-powered-by'].map((k) => [k, res.headers.get(k)]));
      expect({ path, ...h }).toEqual({ path, 'cache-control': 'no-store', etag: null, 'referrer-policy': 'same-origin', 'x-content-type-options': 'nosniff', 'x-powered-by': null });
    }
    for (const path of ['/healthz', '/queues/api/queues']) {
      expect((await fetch(`${d.base}${path}`)).headers.get('x-powered-by')).toBeNull();
    }
  });
});
