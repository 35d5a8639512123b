import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoginThrottle } from './login-throttle.js';
import { PASSWORD, startDashboard, USER, type TestDashboard } from './testing/dashboard-server.js';

let d: TestDashboard;
beforeAll(async () => {
  d = await startDashboard();
});
afterAll(async () => {
  await d?.close();
});

/** GET with Basic credentials from a chosen local address (127.0.0.0/8 is all loopback on Linux). */
function getFrom(from: string, path: string, password: string): Promise<{ status: number; retryAfter: string | undefined }> {
  const { port } = new URL(d.base);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, localAddress: from, headers: { authorization: `Basic ${Buffer.from(`${USER}:${password}`).toString('base64')}` } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('login throttling', () => {
  it('refuses an address after 10 wrong passwords (429, Retry-After), right password included; others log in', async () => {
    for (let i = 0; i < 10; i++) expect((await getFrom('127.0.0.7', '/schedules', `guess-${i}`)).status).toBe(401);
    const refused = await getFrom('127.0.0.7', '/schedules', 'guess-10');
    expect(refused.status).toBe(429);
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    // The guesser learns nothing more, even with the right password.
    expect((await getFrom('127.0.0.7', '/schedules', PASSWORD)).status).toBe(429);
    // The operator elsewhere is not locked out.
    expect((await getFrom('127.0.0.8', '/schedules', PASSWORD)).status).toBe(200);
    // Many right-password requests in parallel (a browser loading a page) never count.
    const loads = await Promise.all(Array.from({ length: 30 }, () => getFrom('127.0.0.9', '/api/schedules', PASSWORD)));
    expect(loads.map((l) => l.status)).toEqual(loads.map(() => 200));
  });

  it('forgets an address when its window ends, and remembers a bounded number of addresses', () => {
    let now = 0;
    const t = createLoginThrottle({ maxFailures: 2, windowMs: 1000, maxClients: 3, now: () => now });
    const req = (ip: string) => ({ socket: { remoteAddress: ip } }) as Parameters<typeof t.failed>[0];
    const gate = (ip: string) => {
      let status = 200;
      const res = { set: () => res, status: (s: number) => ((status = s), res), json: () => res };
      t.gate(req(ip), res as never, () => {});
      return status;
    };
    t.failed(req('a'));
    t.failed(req('a'));
    expect(gate('a')).toBe(429);
    now = 1000;
    expect(gate('a')).toBe(200);
    // Four addresses blocked, room for three: the least recently seen ('b') is forgotten.
    for (const ip of ['b', 'c', 'd', 'e']) {
      t.failed(req(ip));
      t.failed(req(ip));
    }
    expect(['b', 'c', 'd', 'e'].map(gate)).toEqual([200, 429, 429, 429]);
  });
});
