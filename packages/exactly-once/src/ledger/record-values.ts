import { randomBytes } from 'node:crypto';

/** A run record's owner tokens and encoded results (ledger-lua.ts has the record's format). */

const processRandom = randomBytes(6).toString('base64url');
let deliveries = 0;

/**
 * A delivery's owner token: short (it is kept in every done record) and never containing `|`. With the
 * tag of the process making the delivery (`<tag>.<random>`, see recovery/worker-registry.ts), a later
 * delivery that finds the run held can ask whether that process is still alive (ownerTagOf).
 */
export function newOwner(processTag?: string): string {
  // Unique, not secret (it fences writes, it grants nothing): a random part drawn once per process and a
  // counter, instead of a random draw per delivery.
  const random = `${processRandom}${(deliveries++).toString(36)}`;
  return processTag ? `${processTag}.${random}` : random;
}


/** Values are stored as `{"v": value}` so `undefined` and `null` results survive the round trip. */
/** The encoding of a null result (most no-op and fire-and-forget handlers): made once, not per run. */
const NULL_ENCODED = JSON.stringify({ v: null });

export function encodeValue(value: unknown): string {
  if (value === null) return NULL_ENCODED;
  return JSON.stringify({ v: value });
}

export function decodeValue(raw: string): unknown {
  if (raw === '') return undefined;
  return (JSON.parse(raw) as { v?: unknown }).v;
}
