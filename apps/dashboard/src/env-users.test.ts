/** DASHBOARD_USERS in the dashboard's env schema: what starts, and the start-up errors for what does not. */
import { EnvError } from '@tickwork/core';
import { hashPassword } from '@tickwork/operations';
import { beforeAll, describe, expect, it } from 'vitest';
import { dashboardUsers, loadDashboardEnv } from './env.js';

let hash: string;
beforeAll(async () => {
  hash = await hashPassword('viewer-password', { N: 1024, r: 8, p: 1 });
});

/** The start-up error for `env`, checked never to print a hash. */
function startupError(env: Record<string, string>): string {
  try {
    loadDashboardEnv(env);
  } catch (err) {
    expect(err).toBeInstanceOf(EnvError);
    const message = (err as Error).message;
    expect(message).not.toContain(hash);
    expect(message).not.toMatch(/scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9_-]{4,}/);
    return message;
  }
  throw new Error('the environment was accepted');
}

describe('DASHBOARD_USERS', () => {
  it('takes entries separated by commas and newlines, beside the DASHBOARD_USER/DASHBOARD_PASSWORD admin', () => {
    const env = loadDashboardEnv({ DASHBOARD_PASSWORD: 'long-enough', DASHBOARD_USERS: `ann:viewer:${hash},\n bob:admin:${hash}\ncid:viewer:${hash}\n` });
    expect(dashboardUsers(env).map((u) => [u.name, u.role, u.password.kind])).toEqual([
      ['admin', 'admin', 'plain'],
      ['ann', 'viewer', 'scrypt'],
      ['bob', 'admin', 'scrypt'],
      ['cid', 'viewer', 'scrypt'],
    ]);
    // Alone, without DASHBOARD_PASSWORD; blank counts as unset.
    expect(dashboardUsers(loadDashboardEnv({ DASHBOARD_USERS: `ann:admin:${hash}` })).map((u) => u.name)).toEqual(['ann']);
    expect(dashboardUsers(loadDashboardEnv({ DASHBOARD_PASSWORD: 'long-enough', DASHBOARD_USERS: '  ' })).map((u) => u.name)).toEqual(['admin']);
  });

  it('names a malformed entry, an unknown role and a malformed hash by position and user, without the hash', () => {
    const users = [`ann:viewer:${hash}`, `bob:root:${hash}`, 'cid:viewer:scrypt$16384$8$1$c2FsdA$', `dan-viewer-${hash}`, `eve:admin:${hash.replace('scrypt', 'bcrypt')}`].join(',');
    const message = startupError({ DASHBOARD_USERS: users });
    expect(message).toContain('DASHBOARD_USERS is invalid');
    expect(message).toContain('entry 2 (user "bob"): unknown role "root"; use admin or viewer');
    expect(message).toContain('entry 3 (user "cid"):');
    expect(message).toContain('entry 4 is not of the form name:role:password-hash');
    expect(message).toContain('entry 5 (user "eve"): the password hash is not of the form scrypt$N$r$p$salt$hash; make one with `tickwork hash-password`');
    expect(message).not.toContain('entry 1');
  });

  it('refuses a user name given twice, within DASHBOARD_USERS or as DASHBOARD_USER too', () => {
    expect(startupError({ DASHBOARD_USERS: `ann:viewer:${hash}\nann:admin:${hash}` })).toContain('entry 2 (user "ann"): user "ann" is listed twice');
    expect(startupError({ DASHBOARD_PASSWORD: 'long-enough', DASHBOARD_USERS: `admin:viewer:${hash}` })).toContain(
      'user "admin" is both DASHBOARD_USER (with DASHBOARD_PASSWORD) and in DASHBOARD_USERS',
    );
  });

  it('needs DASHBOARD_PASSWORD or DASHBOARD_USERS', () => {
    expect(startupError({})).toContain('DASHBOARD_PASSWORD is not set: set DASHBOARD_PASSWORD');
    expect(startupError({ DASHBOARD_USERS: '' })).toContain('or DASHBOARD_USERS');
  });
});
