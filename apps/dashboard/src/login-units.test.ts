/**
 * The login's parts on their own, where a test over HTTP would have to wait out real windows: the
 * throttle's windows and its full table (a clock the test moves), the check queue's turns, client
 * addresses and DASHBOARD_TRUSTED_PROXIES.
 */
import { createLogger, EnvError } from '@tickwork/core';
import { describe, expect, it } from 'vitest';
import { addressKey } from './client-address.js';
import { loadDashboardEnv } from './env.js';
import { createLoginThrottle, type LoginThrottleOptions } from './login-throttle.js';
import { createCheckQueue, SHED } from './password-checks.js';

const silent = createLogger('test', 'silent');

function throttleAt(opts: LoginThrottleOptions) {
  const clock = { now: 0 };
  const t = createLoginThrottle(silent, { ...opts, now: () => clock.now });
  /** One finished check: 'ok', 'wrong', or 429 if refused. */
  const login = (address: string, user: string, outcome: 'ok' | 'wrong'): 'ok' | 'wrong' | 429 => {
    const ticket = t.reserve(address, user);
    if (ticket.refused) return 429;
    if (outcome === 'ok') ticket.succeeded();
    else ticket.failed();
    return outcome;
  };
  return { t, clock, login };
}

describe('login throttle windows', () => {
  it('blocks a pair for the rest of its window, then lets it try again', () => {
    const { t, clock, login } = throttleAt({ limits: { addressAndUser: 2 }, windowMs: 1000 });
    expect([login('a', 'ann', 'wrong'), login('a', 'ann', 'wrong'), login('a', 'ann', 'ok')]).toEqual(['wrong', 'wrong', 429]);
    clock.now = 400;
    expect(t.refusal('a', 'ann')).toEqual({ refused: true, retryAfterS: 1 });
    clock.now = 1000;
    expect(t.refusal('a', 'ann')).toBeUndefined();
    expect(login('a', 'ann', 'ok')).toBe('ok');
  });

  it("clears a pair's count on success, but not its address's (one password buys no guesses at other names)", () => {
    const { login } = throttleAt({ limits: { addressAndUser: 3, address: 4 } });
    expect([login('a', 'ann', 'wrong'), login('a', 'ann', 'wrong'), login('a', 'ann', 'ok'), login('a', 'ann', 'wrong'), login('a', 'ann', 'wrong')]).toEqual(['wrong', 'wrong', 'ok', 'wrong', 'wrong']);
    expect(login('a', 'bob', 'wrong')).toBe(429);
  });

  it("exempts an address a user logged in from from that user's limit, until the trust expires", () => {
    const { clock, login } = throttleAt({ limits: { user: 2 }, windowMs: 10_000, trustedForMs: 5000 });
    expect(login('home', 'ann', 'ok')).toBe('ok');
    expect([login('x', 'ann', 'wrong'), login('y', 'ann', 'wrong'), login('z', 'ann', 'ok')]).toEqual(['wrong', 'wrong', 429]);
    clock.now = 4000;
    // Each login from there renews the trust (to 9 s).
    expect(login('home', 'ann', 'ok')).toBe('ok');
    clock.now = 9500;
    expect(login('home', 'ann', 'ok')).toBe(429);
    clock.now = 10_000;
    expect(login('z', 'ann', 'ok')).toBe('ok');
  });

  it('when full of blocks, refuses logins that need new counters instead of evicting a block, until one ends', () => {
    const { t, clock, login } = throttleAt({ limits: { addressAndUser: 1 }, windowMs: 10_000, maxKeys: 6 });
    expect(login('a', 'ann', 'wrong')).toBe('wrong');
    clock.now = 5000;
    expect(login('b', 'bob', 'wrong')).toBe('wrong');
    // Six counters, two of them blocked pairs: the oldest unblocked ones are evicted for a newcomer.
    expect(login('c', 'cid', 'wrong')).toBe('wrong');
    expect([t.refusal('a', 'ann'), t.refusal('b', 'bob')].map((r) => r?.refused)).toEqual([true, true]);
    // 'c' left its blocked pair; 'd' evicts the unblocked rest; then four blocked pairs leave 'e' no room.
    expect(login('d', 'dan', 'wrong')).toBe('wrong');
    const refused = t.reserve('e', 'eve');
    expect(refused).toEqual({ refused: true, retryAfterS: 5 });
    expect([t.refusal('a', 'ann'), t.refusal('b', 'bob'), t.refusal('c', 'cid'), t.refusal('d', 'dan')].every((r) => r?.refused)).toBe(true);
    // The first block ends at 10 s: its counter goes, and 'e' gets in.
    clock.now = 10_000;
    expect(login('e', 'eve', 'wrong')).toBe('wrong');
  });
});

describe('password check queue', () => {
  /** A check the test finishes by hand, recording when it started. */
  function gate(started: string[], name: string) {
    let finish = (_: boolean) => {};
    const check = () => {
      started.push(name);
      return new Promise<boolean>((resolve) => (finish = resolve));
    };
    return { check, finish: (v = false) => finish(v) };
  }

  it("takes lanes in turn: one address's queue delays another's first check by one check", async () => {
    const q = createCheckQueue({ concurrency: 1 });
    const started: string[] = [];
    const jobs = ['a1', 'a2', 'a3', 'b1'].map((n) => ({ n, ...gate(started, n) }));
    const results = jobs.map((j) => q.run(j.n[0] as string, false, j.check));
    expect(started).toEqual(['a1']);
    jobs[0]?.finish();
    await results[0];
    await expect.poll(() => started).toEqual(['a1', 'b1']);
    jobs[3]?.finish(true);
    expect(await results[3]).toBe(true);
  });

  it('runs a trusted check at once, in a slot of its own, and sheds from the busiest lane when full', async () => {
    const q = createCheckQueue({ concurrency: 1, maxWaiting: 2 });
    const started: string[] = [];
    const run = (lane: string, name: string, trusted = false) => q.run(lane, trusted, gate(started, name).check);
    const [, , a3] = [run('a', 'a1'), run('a', 'a2'), run('a', 'a3')];
    void run('home', 't1', true);
    expect(started).toEqual(['a1', 't1']);
    // Full (a2, a3 waiting): b1 gets in, and a3, the newest of the longest lane, is shed.
    void run('b', 'b1');
    expect(await a3).toBe(SHED);
    // Still full, and a4's own lane would be the longest: a4 is shed.
    expect(await run('a', 'a4')).toBe(SHED);
    expect(started).toEqual(['a1', 't1']);
  });
});

describe('client addresses', () => {
  it('keys IPv4 as is, IPv4-mapped IPv6 as its IPv4, and IPv6 by its /64', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    const keys = ['2001:db8:0:1::1', '2001:0DB8:0000:0001:ffff:1:2:3', '2001:db8:0:1:abcd::%eth0'].map(addressKey);
    expect(keys).toEqual(['2001:db8:0:1::/64', '2001:db8:0:1::/64', '2001:db8:0:1::/64']);
    expect(addressKey('2001:db8:0:2::1')).toBe('2001:db8:0:2::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
  });
});

describe('DASHBOARD_TRUSTED_PROXIES', () => {
  const base = { DASHBOARD_PASSWORD: 'long-enough' };

  it('takes addresses, CIDR ranges and range names, separated by commas and/or spaces; blank is none', () => {
    const env = loadDashboardEnv({ ...base, DASHBOARD_TRUSTED_PROXIES: '10.0.0.0/8, 192.168.1.10 fd00::/8,loopback' });
    expect(env.DASHBOARD_TRUSTED_PROXIES).toEqual(['10.0.0.0/8', '192.168.1.10', 'fd00::/8', 'loopback']);
    expect(loadDashboardEnv({ ...base, DASHBOARD_TRUSTED_PROXIES: ' ' }).DASHBOARD_TRUSTED_PROXIES).toBeUndefined();
  });

  it('stops the dashboard at start naming every entry that is not an address or a range', () => {
    expect(() => loadDashboardEnv({ ...base, DASHBOARD_TRUSTED_PROXIES: '10.0.0.0/33,proxy.internal,10.0.0.1,1.2.3' })).toThrow(EnvError);
    expect(() => loadDashboardEnv({ ...base, DASHBOARD_TRUSTED_PROXIES: '10.0.0.0/33,proxy.internal,10.0.0.1,1.2.3' })).toThrow(
      /DASHBOARD_TRUSTED_PROXIES.*"10\.0\.0\.0\/33", "proxy\.internal", "1\.2\.3" are not an IP address, a CIDR range \(10\.0\.0\.0\/8\) or one of loopback, linklocal, uniquelocal/,
    );
  });
});
