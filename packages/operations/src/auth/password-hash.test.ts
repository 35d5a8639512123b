/** The bounds on a configured hash's cost: every login check pays it, so a costly hash is refused when it is read. */
import { describe, expect, it } from 'vitest';
import { hashPassword, parsePasswordHash, PasswordHashFormatError, verifyPassword } from './password-hash.js';

/** A well-formed line with these costs: parsing never runs scrypt, so any cost can be written without paying it. */
const line = (N: number, r: number, p: number) => `scrypt$${N}$${r}$${p}$${Buffer.alloc(16, 1).toString('base64url')}$${Buffer.alloc(32, 2).toString('base64url')}`;

function refusal(hash: string): string {
  try {
    parsePasswordHash(hash);
  } catch (err) {
    expect(err).toBeInstanceOf(PasswordHashFormatError);
    return (err as Error).message;
  }
  throw new Error(`${hash} was accepted`);
}

describe('parsePasswordHash bounds the cost of a check', () => {
  it('accepts the default cost (what tickwork hash-password makes) and costs up to 8 times it', async () => {
    const made = await hashPassword('a-password');
    expect(made).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(await verifyPassword('a-password', parsePasswordHash(made))).toBe(true);
    for (const [N, r, p] of [
      [1 << 10, 1, 1],
      [1 << 17, 8, 1],
      [1 << 16, 16, 1],
      [1 << 14, 16, 4],
      [1 << 15, 8, 4],
    ] as const) {
      expect(parsePasswordHash(line(N, r, p))).toMatchObject({ N, r, p });
    }
  });

  it('refuses N = 2^20 (1 GiB and seconds per login) and any N, r, p or total work past the limits, saying which', () => {
    expect(refusal(line(1 << 20, 8, 1))).toBe("the hash's N must be an integer from 1024 to 131072");
    expect(refusal(line(1 << 18, 1, 1))).toBe("the hash's N must be an integer from 1024 to 131072");
    expect(refusal(line(512, 8, 1))).toBe("the hash's N must be an integer from 1024 to 131072");
    expect(refusal(line(1 << 14, 32, 1))).toBe("the hash's r must be an integer from 1 to 16");
    expect(refusal(line(1 << 14, 8, 16))).toBe("the hash's p must be an integer from 1 to 4");
    expect(refusal(line(1 << 17, 16, 1))).toMatch(/^the hash's cost N × r × p \(131072 × 16 × 1\) is over 1048576 \(8 times the default N=16384, r=8, p=1\)/);
    expect(refusal(line(1 << 17, 8, 2))).toMatch(/^the hash's cost N × r × p \(131072 × 8 × 2\) is over 1048576/);
  });
});
