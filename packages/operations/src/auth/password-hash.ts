import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { TickworkError } from '@tickwork/core';

/**
 * Password hashes for dashboard users: node:crypto's scrypt (no dependency), in a self-describing line
 * `scrypt$N$r$p$<salt base64url>$<hash base64url>`, so the cost can be raised later without breaking the
 * hashes already configured. The line holds no `:`, `,` or whitespace, so it fits a `name:role:hash`
 * entry of DASHBOARD_USERS.
 */
export const PASSWORD_HASH_SCHEME = 'scrypt';

/** Node's default cost (N = 2^14, r = 8, p = 1): about 16 MiB and some tens of milliseconds per check. */
const DEFAULT_PARAMS = { N: 16384, r: 8, p: 1 } as const;
const SALT_BYTES = 16;
const KEY_BYTES = 32;

export interface ParsedPasswordHash {
  N: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

/** A hash line that does not parse. The message says what is wrong and never repeats the line itself. */
export class PasswordHashFormatError extends TickworkError {
  override name = 'PasswordHashFormatError';
}

const B64URL = /^[A-Za-z0-9_-]+$/;

function intField(raw: string | undefined, what: string, min: number, max: number): number {
  const n = raw !== undefined && /^\d{1,8}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n < min || n > max) throw new PasswordHashFormatError(`the hash's ${what} must be an integer from ${min} to ${max}`);
  return n;
}

/**
 * The costs a hash may ask for. Every login check (and, for a user name nobody has, a decoy check) pays the
 * hash's cost: 128 × N × r bytes of memory and time in proportion to N × r × p. Unbounded, one configured
 * hash of N = 2^20 took 1 GiB and 7 s per login attempt. So N is a power of two from 2^10 to 2^17, r is 1
 * to 16, p is 1 to 4, and N × r × p is at most 2^20: at most 8 times the default's work (N = 2^14, r = 8,
 * p = 1, what `tickwork hash-password` makes) and 128 MiB. docs/dashboard.md, Users and roles.
 */
export const HASH_COST_LIMITS = { minN: 1 << 10, maxN: 1 << 17, maxR: 16, maxP: 4, maxWork: 1 << 20 } as const;

/** Parses and range-checks a hash line (bounded cost, HASH_COST_LIMITS, so a configured hash cannot stall every login). */
export function parsePasswordHash(line: string): ParsedPasswordHash {
  const parts = line.split('$');
  if (parts.length !== 6 || parts[0] !== PASSWORD_HASH_SCHEME) {
    throw new PasswordHashFormatError('the password hash is not of the form scrypt$N$r$p$salt$hash; make one with `tickwork hash-password`');
  }
  const limits = HASH_COST_LIMITS;
  const N = intField(parts[1], 'N', limits.minN, limits.maxN);
  if ((N & (N - 1)) !== 0) throw new PasswordHashFormatError("the hash's N must be a power of two");
  const r = intField(parts[2], 'r', 1, limits.maxR);
  const p = intField(parts[3], 'p', 1, limits.maxP);
  if (N * r * p > limits.maxWork) {
    throw new PasswordHashFormatError(`the hash's cost N × r × p (${N} × ${r} × ${p}) is over ${limits.maxWork} (8 times the default N=16384, r=8, p=1); make one with \`tickwork hash-password\``);
  }
  const [salt, hash] = [parts[4] ?? '', parts[5] ?? ''];
  if (!B64URL.test(salt) || !B64URL.test(hash)) throw new PasswordHashFormatError("the hash's salt and hash must be base64url");
  const saltBuf = Buffer.from(salt, 'base64url');
  const hashBuf = Buffer.from(hash, 'base64url');
  if (saltBuf.length < 8) throw new PasswordHashFormatError("the hash's salt is shorter than 8 bytes");
  if (hashBuf.length < 16 || hashBuf.length > 128) throw new PasswordHashFormatError("the hash's hash must be 16 to 128 bytes");
  return { N, r, p, salt: saltBuf, hash: hashBuf };
}

function derive(password: string, salt: Buffer, keylen: number, params: { N: number; r: number; p: number }): Promise<Buffer> {
  // maxmem must cover 128 * N * r (Node refuses at its 32 MiB default for the largest accepted costs).
  const opts: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r + 1024 * 1024 };
  return new Promise((resolve, reject) => scrypt(password, salt, keylen, opts, (err, key) => (err ? reject(err) : resolve(key))));
}

/** Hashes a password with a fresh random salt. */
export async function hashPassword(password: string, params: { N: number; r: number; p: number } = DEFAULT_PARAMS): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const hash = await derive(password, salt, KEY_BYTES, params);
  return [PASSWORD_HASH_SCHEME, params.N, params.r, params.p, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

/** Whether `password` matches the parsed hash; compared in constant time. */
export async function verifyPassword(password: string, parsed: ParsedPasswordHash): Promise<boolean> {
  const key = await derive(password, parsed.salt, parsed.hash.length, parsed);
  return timingSafeEqual(key, parsed.hash);
}
