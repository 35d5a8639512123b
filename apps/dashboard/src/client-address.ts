import { isIP } from 'node:net';
import { TickworkError } from '@tickwork/core';
import type { Request } from 'express';

/** Names express's `trust proxy` (proxy-addr) accepts for whole ranges. */
const RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** A DASHBOARD_TRUSTED_PROXIES entry that is not an address, a CIDR range or a range name; the message lists each. */
export class TrustedProxiesError extends TickworkError {
  override name = 'TrustedProxiesError';
}

/**
 * Parses DASHBOARD_TRUSTED_PROXIES: IPv4/IPv6 addresses, CIDR ranges (`10.0.0.0/8`, `fd00::/8`) and the
 * names `loopback`, `linklocal`, `uniquelocal`, separated by commas, whitespace or both. Checked here
 * rather than left to express, which would throw a bare TypeError at the first request.
 */
export function parseTrustedProxies(raw: string): string[] {
  const entries = raw.split(/[\s,]+/).filter((e) => e !== '');
  const bad = entries.filter((e) => !RANGE_NAMES.has(e) && !isAddressOrRange(e));
  if (bad.length > 0) {
    const shown = bad.map((e) => JSON.stringify(e.slice(0, 60))).join(', ');
    throw new TrustedProxiesError(`${shown} ${bad.length === 1 ? 'is' : 'are'} not an IP address, a CIDR range (10.0.0.0/8) or one of loopback, linklocal, uniquelocal`);
  }
  return entries;
}

function isAddressOrRange(entry: string): boolean {
  const [address = '', prefix, extra] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/**
 * The address a login is counted against. `req.ip` is the socket's peer, or, when express's `trust proxy`
 * names the peer (DASHBOARD_TRUSTED_PROXIES), the nearest X-Forwarded-For entry no trusted proxy added;
 * an untrusted peer's X-Forwarded-For is ignored, so a client cannot choose its own key.
 */
export function clientAddress(req: Request): string {
  return addressKey(req.ip ?? req.socket.remoteAddress ?? 'unknown');
}

/**
 * IPv4 as is (an IPv4-mapped IPv6 address as its IPv4); IPv6 by its /64, the block one subscriber
 * usually gets: within it a client can take a fresh address for every request.
 */
export function addressKey(ip: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  if (mapped?.[1]) return mapped[1];
  const bare = ip.split('%')[0] ?? ip;
  if (isIP(bare) !== 6) return ip;
  // The URL parser writes an IPv6 address in its one canonical form (lower case, no leading zeros, `::`).
  const canonical = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
  const [head = '', tail] = canonical.split('::');
  const front = head === '' ? [] : head.split(':');
  const back = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? front : [...front, ...Array<string>(8 - front.length - back.length).fill('0'), ...back];
  return `${groups.slice(0, 4).join(':')}::/64`;
}
