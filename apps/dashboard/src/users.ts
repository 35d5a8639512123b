import { parsePasswordHash, PasswordHashFormatError, type ParsedPasswordHash } from '@tickwork/operations';
import { TickworkError } from '@tickwork/core';

/** `admin` may do everything; `viewer` sees every page and Bull Board read-only, and changes nothing. */
export const ROLES = ['admin', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/**
 * A user's password: a scrypt hash (DASHBOARD_USERS), or the plain DASHBOARD_PASSWORD, which the login
 * hashes with scrypt at start (credentials.ts) so that every user's check is the same work.
 */
export type PasswordCheck = { kind: 'scrypt'; hash: ParsedPasswordHash } | { kind: 'plain'; password: string };

export interface DashboardUser {
  name: string;
  role: Role;
  password: PasswordCheck;
}

/** Letters, digits and `. _ @ -`: never `:` (it ends the name in HTTP Basic), `,` or whitespace (they separate entries). */
const NAME = /^[A-Za-z0-9._@-]{1,64}$/;

export const isUserName = (name: string): boolean => NAME.test(name);

/** A DASHBOARD_USERS entry that does not parse; the message names it by position and user name, never its hash. */
export class UsersConfigError extends TickworkError {
  override name = 'UsersConfigError';
}

/**
 * Parses DASHBOARD_USERS: entries `name:role:password-hash`, separated by commas, newlines or both
 * (whitespace around an entry is ignored, and so are empty entries, e.g. a trailing newline). Entries are
 * numbered from 1 in error messages. Throws UsersConfigError listing every bad entry.
 */
export function parseUsers(raw: string): DashboardUser[] {
  const entries = raw
    .split(/[,\n\r]+/)
    .map((e) => e.trim())
    .filter((e) => e !== '');
  const problems: string[] = [];
  const users: DashboardUser[] = [];
  const seen = new Set<string>();
  entries.forEach((entry, i) => {
    const parts = entry.split(':');
    const name = parts[0] ?? '';
    const where = `entry ${i + 1}${NAME.test(name) ? ` (user "${name}")` : ''}`;
    if (parts.length !== 3) {
      problems.push(`${where} is not of the form name:role:password-hash (${parts.length} part${parts.length === 1 ? '' : 's'} separated by ':')`);
      return;
    }
    const role = parts[1] ?? '';
    if (!NAME.test(name)) return void problems.push(`${where}: the user name must be 1 to 64 letters, digits or . _ @ -`);
    if (!(ROLES as readonly string[]).includes(role)) return void problems.push(`${where}: ${/^[a-z]{1,16}$/.test(role) ? `unknown role "${role}"` : "the role is not admin or viewer"}; use admin or viewer`);
    let hash: ParsedPasswordHash;
    try {
      hash = parsePasswordHash(parts[2] ?? '');
    } catch (err) {
      if (!(err instanceof PasswordHashFormatError)) throw err;
      return void problems.push(`${where}: ${err.message}`);
    }
    if (seen.has(name)) return void problems.push(`${where}: user "${name}" is listed twice`);
    seen.add(name);
    users.push({ name, role: role as Role, password: { kind: 'scrypt', hash } });
  });
  if (problems.length > 0) throw new UsersConfigError(problems.join('; '));
  return users;
}

/** The DASHBOARD_USER / DASHBOARD_PASSWORD pair: one admin with a plain password (the environment holds it anyway). */
export function plainAdmin(name: string, password: string): DashboardUser {
  return { name, role: 'admin', password: { kind: 'plain', password } };
}
