import type { Logger } from '@tickwork/core';

/** Password checks allowed in one window, per scope. */
export interface LoginLimits {
  /** From one address, whatever the user names: bounds password spraying across names, and the work. */
  address: number;
  /** From one address for one user name: the guesses at one account a client gets. */
  addressAndUser: number;
  /** For one user name from all addresses together, except from addresses it recently logged in from. */
  user: number;
}

export const DEFAULT_LOGIN_LIMITS: LoginLimits = { address: 100, addressAndUser: 10, user: 20 };

export interface LoginThrottleOptions {
  limits?: Partial<LoginLimits>;
  windowMs?: number;
  /** Counters kept at most (addresses, names and pairs together). A blocked counter is never evicted. */
  maxKeys?: number;
  /** How long a successful login exempts its address from its user name's limit. */
  trustedForMs?: number;
  /** (address, user) pairs remembered as trusted at most, the least recently used forgotten first. */
  maxTrusted?: number;
  now?: () => number;
}

type Scope = keyof LoginLimits;

interface Counter {
  scope: Scope;
  address?: string;
  user?: string;
  /** Checks reserved in this window: the failed ones and those still running. */
  count: number;
  running: number;
  failed: number;
  refused: number;
  windowStart: number;
}

export interface Refusal {
  refused: true;
  retryAfterS: number;
}

/** A reserved check. Exactly one of its three methods is called once the check is over. */
export interface Ticket {
  refused: false;
  /** The (address, user) pair logged in recently: its check goes ahead of unknown ones. */
  trusted: boolean;
  succeeded(): void;
  failed(): void;
  /** The check did not run (the queue shed it): as if it had never been reserved. */
  cancel(): void;
}

export interface LoginThrottle {
  /** Whether a request is refused now, before anything else is done for it. No user: the address alone. */
  refusal(address: string, user?: string): Refusal | undefined;
  /** Counts a password check before it runs, so parallel requests cannot all pass `refusal` first. */
  reserve(address: string, user: string): Ticket | Refusal;
}

/**
 * Password checks are counted per address, per (address, user name) and per user name, in fixed windows.
 * A check is counted when it is reserved, synchronously, before the scrypt work starts: 200 parallel
 * requests get `addressAndUser` checks and 429 for the rest, as sequential ones do. A successful check
 * gives its reservation back (and clears its pair's count), so a logged-in operator is never throttled.
 * Unknown names are counted like known ones: a 429 must not tell which names exist.
 *
 * Memory is bounded by `maxKeys`. To make room the least recently used counter that is neither blocked
 * nor waiting on a check is evicted; a blocked one never is (filling the table must not lift a block),
 * and when nothing can be evicted a request needing new counters is refused until something can.
 */
export function createLoginThrottle(log: Logger, opts: LoginThrottleOptions = {}): LoginThrottle {
  const limits: LoginLimits = { ...DEFAULT_LOGIN_LIMITS, ...opts.limits };
  const windowMs = opts.windowMs ?? 15 * 60_000;
  const maxKeys = Math.max(3, opts.maxKeys ?? 30_000);
  const trustedForMs = opts.trustedForMs ?? 24 * 60 * 60_000;
  const maxTrusted = opts.maxTrusted ?? 10_000;
  const now = opts.now ?? Date.now;
  // Maps iterate in insertion order; re-inserting on use keeps the least recently used first.
  const counters = new Map<string, Counter>();
  const trusted = new Map<string, number>();
  let fullUntil = 0;
  let fullRefusals = 0;

  const keys = (address: string, user?: string) => ({
    address: `a ${address}`,
    addressAndUser: user === undefined ? undefined : `p ${address} ${user}`,
    user: user === undefined ? undefined : `u ${user}`,
  });
  const ends = (c: Counter) => c.windowStart + windowMs;
  const blocks = (c: Counter) => c.count >= limits[c.scope];
  const live = (key: string | undefined): Counter | undefined => {
    const c = key === undefined ? undefined : counters.get(key);
    if (!c || now() < ends(c)) return c;
    if (c.running === 0) return void counters.delete(key as string);
    // A new window for a counter with checks still running (their tickets hold it): they count in it.
    Object.assign(c, { windowStart: now(), count: c.running, failed: 0, refused: 0 });
    return c;
  };
  const isTrusted = (pair: string): boolean => {
    const until = trusted.get(pair);
    if (until !== undefined && until <= now()) trusted.delete(pair);
    return until !== undefined && until > now();
  };

  const fields = (c: Counter) => ({ scope: c.scope, ...(c.user !== undefined && { user: c.user }), ...(c.address !== undefined && { address: c.address }) });
  const refuse = (blocking: Counter[]): Refusal => {
    const first = blocking[0];
    const retryAfterS = Math.max(1, Math.ceil((Math.max(...blocking.map(ends)) - now()) / 1000));
    if (first) {
      first.refused += 1;
      // The first refusal of a block, then the 10th, 100th, ...: a flood of 429s writes a handful of lines.
      if (first.refused === 1) log.warn({ ...fields(first), failures: first.failed, retryAfterS }, 'dashboard login blocked');
      else if (isPowerOfTen(first.refused)) log.warn({ ...fields(first), refused: first.refused, retryAfterS }, 'dashboard logins refused');
    }
    return { refused: true, retryAfterS };
  };

  const blockingNow = (address: string, user?: string): Counter[] => {
    const k = keys(address, user);
    const found = [live(k.address), live(k.addressAndUser)];
    if (k.user !== undefined && k.addressAndUser !== undefined && !isTrusted(k.addressAndUser)) found.push(live(k.user));
    return found.filter((c): c is Counter => c !== undefined && blocks(c));
  };

  /** Room for `needed` more counters, evicting the least recently used that blocks nothing and waits on nothing. */
  const makeRoom = (needed: number, own: readonly string[]): number | undefined => {
    if (counters.size + needed <= maxKeys) return undefined;
    const t = now();
    if (t < fullUntil) return fullUntil;
    let soonest = t + windowMs;
    for (const [key, c] of counters) {
      if (counters.size + needed <= maxKeys) break;
      if (c.running === 0 && !own.includes(key) && (t >= ends(c) || !blocks(c))) counters.delete(key);
      else soonest = Math.min(soonest, ends(c));
    }
    if (counters.size + needed <= maxKeys) return undefined;
    // Scanning the whole table on every request would be the attacker's lever: once a second at most.
    fullUntil = Math.min(soonest, t + 1000);
    return soonest;
  };

  return {
    refusal(address, user) {
      const blocking = blockingNow(address, user);
      return blocking.length > 0 ? refuse(blocking) : undefined;
    },

    reserve(address, user) {
      const blocking = blockingNow(address, user);
      if (blocking.length > 0) return refuse(blocking);
      const k = keys(address, user);
      const pair = k.addressAndUser as string;
      const scoped: [Scope, string][] = [['address', k.address], ['addressAndUser', pair], ['user', k.user as string]];
      const missing = scoped.filter(([, key]) => live(key) === undefined).length;
      const fullTill = makeRoom(missing, scoped.map(([, key]) => key));
      if (fullTill !== undefined) {
        fullRefusals += 1;
        if (isPowerOfTen(fullRefusals)) log.warn({ refused: fullRefusals, maxKeys }, 'dashboard login counters full of blocks: refusing logins that need new ones');
        return { refused: true, retryAfterS: Math.max(1, Math.ceil((fullTill - now()) / 1000)) };
      }
      const held = scoped.map(([scope, key]) => {
        const c = live(key) ?? { scope, ...(scope !== 'user' && { address }), ...(scope !== 'address' && { user }), count: 0, running: 0, failed: 0, refused: 0, windowStart: now() };
        counters.delete(key);
        counters.set(key, c);
        c.count += 1;
        c.running += 1;
        return c;
      });
      const [, pairCounter] = held as [Counter, Counter, Counter];
      let settled = false;
      const settle = (outcome: 'succeeded' | 'failed' | 'cancelled') => {
        if (settled) return;
        settled = true;
        for (const c of held) {
          c.running -= 1;
          if (outcome === 'failed') c.failed += 1;
          else c.count -= 1;
        }
        if (outcome === 'succeeded') {
          // A typo or two before the right password is forgotten; the address's and the name's counts are
          // not cleared, or one account's password would buy unlimited guesses at the others.
          pairCounter.count = pairCounter.running;
          pairCounter.failed = 0;
          trusted.delete(pair);
          trusted.set(pair, now() + trustedForMs);
          if (trusted.size > maxTrusted) trusted.delete(trusted.keys().next().value as string);
        }
        if (outcome === 'failed') {
          if (pairCounter.failed === 1) log.warn({ user, address, failures: 1 }, 'dashboard login failed');
          else if (pairCounter.failed === limits.addressAndUser) log.warn({ user, address, failures: pairCounter.failed }, 'dashboard login failed');
        }
      };
      return {
        refused: false,
        trusted: isTrusted(pair),
        succeeded: () => settle('succeeded'),
        failed: () => settle('failed'),
        cancel: () => settle('cancelled'),
      };
    },
  };
}

function isPowerOfTen(n: number): boolean {
  return n >= 1 && 10 ** Math.round(Math.log10(n)) === n;
}
