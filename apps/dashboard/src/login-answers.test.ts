/**
 * What a failed login leaves behind, over real HTTP: log lines (a bounded few per guesser, never a
 * password), the page a browser shows and the JSON a script reads, and the same scrypt check for every
 * name, so an answer's timing cannot tell which names exist.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attempt, capturedLogger, recordingVerify, tally } from './testing/login-client.js';
import { HASHED_ADMIN, PASSWORD, startDashboard, USER, VIEWER, VIEWER_PASSWORD, type TestDashboard } from './testing/dashboard-server.js';

const captured = capturedLogger();
const recorded = recordingVerify();
let d: TestDashboard;
beforeAll(async () => {
  d = await startDashboard('tw', captured.log, 'standalone', { auth: { verify: recorded.verify } });
});
afterAll(async () => {
  await d?.close();
});

const loginLines = () => captured.lines.filter((l) => typeof l.msg === 'string' && l.msg.includes('dashboard login'));

describe('failed logins in the log', () => {
  it('a burst of 300 guesses writes a handful of lines, naming user, address and counts, never a password', async () => {
    const guesses = Array.from({ length: 300 }, (_, i) => attempt(d.base, { user: VIEWER, password: `secret-guess-${i}`, from: '127.0.6.1' }));
    expect(tally(await Promise.all(guesses))).toEqual({ 401: 10, 429: 290 });
    // A right password while blocked is refused, and not logged either.
    expect((await attempt(d.base, { user: VIEWER, password: VIEWER_PASSWORD, from: '127.0.6.1' })).status).toBe(429);

    const lines = loginLines().map(({ msg, user, address, scope, failures, refused }) => ({ msg, user, address, scope, failures, refused }));
    const who = { user: VIEWER, address: '127.0.6.1' };
    // In whatever order the checks and refusals happened to interleave.
    expect(lines).toHaveLength(5);
    expect(lines).toEqual(
      expect.arrayContaining([
        { msg: 'dashboard login failed', ...who, scope: undefined, failures: 1, refused: undefined },
        { msg: 'dashboard login failed', ...who, scope: undefined, failures: 10, refused: undefined },
        expect.objectContaining({ msg: 'dashboard login blocked', ...who, scope: 'addressAndUser', refused: undefined }),
        expect.objectContaining({ msg: 'dashboard logins refused', ...who, scope: 'addressAndUser', refused: 10 }),
        expect.objectContaining({ msg: 'dashboard logins refused', ...who, scope: 'addressAndUser', refused: 100 }),
      ]),
    );
    expect(captured.text()).not.toContain('secret-guess');
    expect(captured.text()).not.toContain(VIEWER_PASSWORD);
  });

  it('a wrong password for an unknown name is logged under that name', async () => {
    expect((await attempt(d.base, { user: 'mallory', password: 'secret-guess', from: '127.0.6.2' })).status).toBe(401);
    expect(loginLines().at(-1)).toMatchObject({ msg: 'dashboard login failed', user: 'mallory', address: '127.0.6.2', failures: 1, level: 40 });
  });
});

describe('the answer to a failed login', () => {
  const browserAccept = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

  it('is a small page for a browser, with the Basic challenge, and JSON for a script or the JSON API', async () => {
    const page = await attempt(d.base, { user: USER, password: 'wrong-password', from: '127.0.7.1', headers: browserAccept });
    expect(page.status).toBe(401);
    expect(page.contentType).toMatch(/^text\/html/);
    expect(page.body).toContain('<h1>Sign-in required</h1>');
    const unauthenticated = await fetch(`${d.base}/schedules`, { headers: browserAccept });
    expect([unauthenticated.status, unauthenticated.headers.get('www-authenticate'), unauthenticated.headers.get('cache-control')]).toEqual([401, 'Basic realm="tickwork", charset="UTF-8"', 'no-store']);

    const script = await attempt(d.base, { user: USER, password: 'wrong-password', from: '127.0.7.1' });
    expect([script.status, script.contentType, JSON.parse(script.body)]).toEqual([401, expect.stringMatching(/^application\/json/), { error: 'authentication required' }]);
    const api = await attempt(d.base, { user: USER, password: 'wrong-password', from: '127.0.7.1', path: '/api/schedules', headers: browserAccept });
    expect([api.status, JSON.parse(api.body)]).toEqual([401, { error: 'authentication required' }]);
  });

  it('once blocked, is a page saying when to try again for a browser, and JSON for a script', async () => {
    for (let i = 0; i < 10; i++) await attempt(d.base, { user: USER, password: `guess-${i}`, from: '127.0.7.2' });
    const page = await attempt(d.base, { user: USER, password: PASSWORD, from: '127.0.7.2', headers: browserAccept });
    expect([page.status, page.contentType]).toEqual([429, expect.stringMatching(/^text\/html/)]);
    expect(page.body).toMatch(/Try again in \d+ minutes/);
    const script = await attempt(d.base, { user: USER, password: PASSWORD, from: '127.0.7.2' });
    expect([script.status, JSON.parse(script.body)]).toEqual([429, { error: expect.stringMatching(/^too many wrong passwords; try again in \d+ s$/) }]);
  });
});

describe('the same work for every name', () => {
  it('checks an unknown name, the DASHBOARD_PASSWORD admin and DASHBOARD_USERS users with one scrypt check of one cost', async () => {
    recorded.calls.length = 0;
    for (const user of ['nobody', USER, VIEWER, HASHED_ADMIN]) {
      expect((await attempt(d.base, { user, password: 'not-the-password', from: '127.0.8.1' })).status).toBe(401);
    }
    expect(recorded.calls).toHaveLength(4);
    const costs = recorded.calls.map(({ N, r, p, salt, hash }) => ({ N, r, p, salt: salt.length, hash: hash.length }));
    expect(new Set(costs.map((c) => JSON.stringify(c))).size).toBe(1);
    // Four different hashes: the unknown name's is a decoy, not a user's.
    expect(new Set(recorded.calls).size).toBe(4);
    // The admin's right password passes through the same scrypt path.
    expect((await attempt(d.base, { user: USER, password: PASSWORD, from: '127.0.8.2' })).status).toBe(200);
    expect(recorded.calls).toHaveLength(5);
  });
});
