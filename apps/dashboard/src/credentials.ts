import { randomBytes } from 'node:crypto';
import { hashPassword, parsePasswordHash, type ParsedPasswordHash } from '@tickwork/operations';
import type { DashboardUser } from './users.js';

export interface Credential {
  /** Undefined for a name nobody has. */
  user: DashboardUser | undefined;
  /** What the offered password is checked against: the user's scrypt hash, or a decoy of the same cost. */
  hash: ParsedPasswordHash;
}

export interface Credentials {
  /** Every name gets a hash, so an unknown name, the plain admin and a DASHBOARD_USERS user cost the same check. */
  lookup(name: string): Credential;
}

/**
 * Makes every login the same work: the DASHBOARD_PASSWORD admin's password is hashed here, at start,
 * with scrypt at the cost the DASHBOARD_USERS hashes use, and an unknown name is checked against a decoy
 * hash of that cost (of a random password, so nothing matches it). Which of the three a name is cannot
 * be told from how long its answer takes. The cost is the one most DASHBOARD_USERS hashes have, or
 * `tickwork hash-password`'s default without any; a hash of another cost does take a different time.
 */
export async function prepareCredentials(users: readonly DashboardUser[]): Promise<Credentials> {
  const cost = usualCost(users);
  const hashed = async (password: string) => parsePasswordHash(cost ? await hashPassword(password, cost) : await hashPassword(password));
  const byName = new Map<string, Credential>();
  for (const user of users) {
    byName.set(user.name, { user, hash: user.password.kind === 'scrypt' ? user.password.hash : await hashed(user.password.password) });
  }
  const decoy: Credential = { user: undefined, hash: await hashed(randomBytes(24).toString('base64url')) };
  return { lookup: (name) => byName.get(name) ?? decoy };
}

/** The (N, r, p) most DASHBOARD_USERS hashes share; undefined without any. */
function usualCost(users: readonly DashboardUser[]): { N: number; r: number; p: number } | undefined {
  const tally = new Map<string, { cost: { N: number; r: number; p: number }; n: number }>();
  for (const u of users) {
    if (u.password.kind !== 'scrypt') continue;
    const { N, r, p } = u.password.hash;
    const key = `${N}/${r}/${p}`;
    const t = tally.get(key) ?? { cost: { N, r, p }, n: 0 };
    t.n += 1;
    tally.set(key, t);
  }
  return [...tally.values()].sort((a, b) => b.n - a.n)[0]?.cost;
}
