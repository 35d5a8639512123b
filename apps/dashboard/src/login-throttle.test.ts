/**
 * The login throttle against an attacker over real HTTP: parallel bursts of guesses, rotated names,
 * forged and forwarded X-Forwarded-For, and a table filled to lift a block. Each dashboard counts its
 * scrypt checks (recordingVerify), so "at most 10 checks" is measured, not inferred from statuses.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attempt, recordingVerify, tally, type Attempt } from './testing/login-client.js';
import { HASHED_ADMIN, HASHED_ADMIN_PASSWORD, PASSWORD, startDashboard, USER, VIEWER, VIEWER_PASSWORD, type LoginSettings, type TestDashboard } from './testing/dashboard-server.js';

/** A dashboard for one describe block, with its own throttle and a record of its checks. */
function useDashboard(login: LoginSettings = {}) {
  const recorded = recordingVerify();
  const ctx = { d: undefined as unknown as TestDashboard, checks: recorded.calls };
  beforeAll(async () => {
    ctx.d = await startDashboard('tw', undefined, 'standalone', { ...login, auth: { verify: recorded.verify } });
  });
  afterAll(async () => {
    await ctx.d?.close();
  });
  return ctx;
}

const guesses = (n: number, a: Omit<Attempt, 'password'>): Attempt[] => Array.from({ length: n }, (_, i) => ({ ...a, password: `guess-${i}` }));
const forwardedFrom = (address: string) => ({ 'x-forwarded-for': address });

describe('a dashboard reached directly', () => {
  const ctx = useDashboard();
  const send = (a: Attempt) => attempt(ctx.d.base, a);

  it('checks 10 of 200 parallel wrong passwords for a DASHBOARD_USERS user, an unknown name and the admin, and answers 429 to the rest; a user elsewhere logs in meanwhile', async () => {
    const targets = [VIEWER, 'nobody', USER];
    const bursts = targets.map((user, i) => Promise.all(guesses(200, { user, from: `127.0.1.${i + 1}` }).map(send)));
    const meanwhile = send({ user: HASHED_ADMIN, password: HASHED_ADMIN_PASSWORD, from: '127.0.1.9' });
    const answers = await Promise.all(bursts);
    expect((await meanwhile).status).toBe(200);
    for (const [i, burst] of answers.entries()) {
      expect({ user: targets[i], statuses: tally(burst) }).toEqual({ user: targets[i], statuses: { 401: 10, 429: 190 } });
      expect(burst.filter((a) => a.status === 429).every((a) => Number(a.retryAfter) > 0)).toBe(true);
    }
    // 30 guesses and the one real login: every other request was refused before any scrypt work.
    expect(ctx.checks.length).toBe(31);

    // The guesser learns nothing more, even with the right password; the same user elsewhere logs in.
    expect((await send({ user: USER, password: PASSWORD, from: '127.0.1.3' })).status).toBe(429);
    expect((await send({ user: USER, password: PASSWORD, from: '127.0.1.10' })).status).toBe(200);
    expect((await send({ user: VIEWER, password: VIEWER_PASSWORD, from: '127.0.1.11' })).status).toBe(200);
  });

  it('the same wrong password sent 200 times in parallel is one check, and each copy counts', async () => {
    const before = ctx.checks.length;
    const same = await Promise.all(Array.from({ length: 200 }, () => send({ user: HASHED_ADMIN, password: 'same-guess', from: '127.0.2.1' })));
    expect(tally(same)[401]).toBeLessThanOrEqual(10);
    expect(ctx.checks.length - before).toBeLessThanOrEqual(10);
    expect((await send({ user: HASHED_ADMIN, password: 'another-guess', from: '127.0.2.1' })).status).toBe(429);
  });

  it('one address guessing at 300 names gets 100 checks (its own limit), then 429', async () => {
    const before = ctx.checks.length;
    const spray = await Promise.all(Array.from({ length: 300 }, (_, i) => send({ user: `name-${i}`, password: 'Spring2024!', from: '127.0.3.1' })));
    expect(tally(spray)).toEqual({ 401: 100, 429: 200 });
    expect(ctx.checks.length - before).toBe(100);
    expect((await send({ user: VIEWER, password: VIEWER_PASSWORD, from: '127.0.3.1' })).status).toBe(429);
  });

  it('never reads X-Forwarded-For without a trusted proxy: a client rotating it keeps its one count', async () => {
    const rotated = await Promise.all(guesses(30, { user: USER, from: '127.0.4.1' }).map((g, i) => send({ ...g, headers: forwardedFrom(`10.0.0.${i + 1}`) })));
    expect(tally(rotated)).toEqual({ 401: 10, 429: 20 });
  });

  it("many right-password requests in parallel (a browser loading a page) never count, and cost one check", async () => {
    const before = ctx.checks.length;
    const loads = await Promise.all(Array.from({ length: 30 }, () => send({ user: VIEWER, password: VIEWER_PASSWORD, from: '127.0.5.1', path: '/api/schedules' })));
    expect(tally(loads)).toEqual({ 200: 30 });
    expect(ctx.checks.length - before).toBeLessThanOrEqual(1);
  });
});

describe('a dashboard behind a trusted proxy (DASHBOARD_TRUSTED_PROXIES=loopback)', () => {
  const ctx = useDashboard({ trustedProxies: ['loopback'] });
  const via = (address: string, user: string, password: string) => attempt(ctx.d.base, { user, password, headers: forwardedFrom(address) });
  const burst = (address: string, user: string, n: number) => Promise.all(guesses(n, { user }).map((g) => attempt(ctx.d.base, { ...g, headers: forwardedFrom(address) })));

  it("counts each forwarded address on its own, and a user name's guesses from all of them together", async () => {
    // The operator logs in from their own address first.
    expect((await via('203.0.113.7', USER, PASSWORD)).status).toBe(200);

    // Two addresses get 10 guesses each: the name's limit (20) is then reached.
    expect(tally(await burst('198.51.100.1', USER, 15))).toEqual({ 401: 10, 429: 5 });
    expect(tally(await burst('198.51.100.2', USER, 15))).toEqual({ 401: 10, 429: 5 });
    // A third address gets no guess at that name, the right password included; other names are open to it.
    expect(tally(await burst('198.51.100.3', USER, 5))).toEqual({ 429: 5 });
    expect((await via('198.51.100.3', USER, PASSWORD)).status).toBe(429);
    expect((await via('198.51.100.3', VIEWER, VIEWER_PASSWORD)).status).toBe(200);
    // The operator, at the address they logged in from, is not locked out by the guessers.
    expect((await via('203.0.113.7', USER, PASSWORD)).status).toBe(200);
  });

  it("takes the client from the proxy's last X-Forwarded-For entry, not from what the client put before it", async () => {
    const forged = await Promise.all(
      guesses(30, { user: VIEWER }).map((g, i) => attempt(ctx.d.base, { ...g, headers: forwardedFrom(`10.9.${i}.1, 192.0.2.50`) })),
    );
    expect(tally(forged)).toEqual({ 401: 10, 429: 20 });
  });
});

describe('a full table of counters', () => {
  const ctx = useDashboard({ trustedProxies: ['loopback'], loginThrottle: { maxKeys: 30, limits: { address: 15 } } });
  const via = (address: string, user: string, password: string) => attempt(ctx.d.base, { user, password, headers: forwardedFrom(address) });

  it('does not lift a block when it is filled with other addresses and names', async () => {
    for (let i = 0; i < 10; i++) expect((await via('192.0.2.1', USER, `guess-${i}`)).status).toBe(401);
    for (let i = 0; i < 5; i++) expect((await via('192.0.2.1', VIEWER, `guess-${i}`)).status).toBe(401);
    expect((await via('192.0.2.1', HASHED_ADMIN, HASHED_ADMIN_PASSWORD)).status).toBe(429);

    // 100 other clients, a name each: three counters apiece cycle the 30-entry table many times over.
    for (let i = 0; i < 100; i++) expect((await via(`10.1.${i}.1`, `someone-${i}`, 'guess')).status).toBe(401);

    // The blocked address and its blocked (address, user) pair are still blocked; the others get in.
    expect((await via('192.0.2.1', HASHED_ADMIN, HASHED_ADMIN_PASSWORD)).status).toBe(429);
    expect((await via('192.0.2.1', USER, PASSWORD)).status).toBe(429);
    expect((await via('192.0.2.2', USER, PASSWORD)).status).toBe(200);
  });
});
