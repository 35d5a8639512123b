/**
 * Roles: a viewer reads everything and changes nothing (403 on every state-changing route, tickwork's and
 * every one Bull Board defines), an admin acts; every action is logged with its user and kept in the audit
 * stream, newest first.
 */
import { createRequire } from 'node:module';
import { Writable } from 'node:stream';
import { catalog } from '@tickwork/jobs';
import { createLogger } from '@tickwork/core';
import { createSchedules } from '@tickwork/schedules';
import { listDeadLetters, loadCancelRequests } from '@tickwork/operations';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { deadLetterEmail, HASHED_ADMIN, HASHED_ADMIN_AUTH, startDashboard, VIEWER, VIEWER_AUTH, basicHeader, type TestDashboard } from './testing/dashboard-server.js';

const logLines: Record<string, unknown>[] = [];
const log = createLogger('dashboard', 'info', new Writable({ write: (chunk: Buffer, _e, done) => (chunk.toString().split('\n').filter(Boolean).forEach((l) => logLines.push(JSON.parse(l) as Record<string, unknown>)), done()) }));
let d: TestDashboard;
beforeAll(async () => {
  d = await startDashboard('tw', log);
});
afterAll(async () => {
  await d?.close();
});
beforeEach(async () => {
  await d.redis.flushdb();
  logLines.length = 0;
});

/** Every route Bull Board 9 defines, from the library itself: a route it adds later is covered too. */
function boardChangeRoutes(): { method: string; path: string }[] {
  const require = createRequire(import.meta.url);
  const routesFile = require.resolve('@bull-board/api').replace(/index\.js$/, 'routes.js');
  const { appRoutes } = require(routesFile) as { appRoutes: { api: { method: string; route: string }[] } };
  return appRoutes.api
    .filter((r) => r.method !== 'get')
    .map((r) => ({
      method: r.method.toUpperCase(),
      path: `/queues${r.route.replace(':queueName', 'email').replace(':jobId', 'mail-1').replace(':queueStatus', 'failed').replace(':schedulerId', 's1')}`,
    }));
}

async function token(): Promise<string> {
  const page = await (await fetch(`${d.base}/jobs?queue=email`, { headers: HASHED_ADMIN_AUTH })).text();
  const t = /name="_csrf" value="([^"]+)"/.exec(page)?.[1];
  if (!t) throw new Error("no CSRF token on an admin's /jobs page");
  return t;
}

const send = (method: string, path: string, auth: Record<string, string>, body?: string, type = 'application/json') =>
  fetch(`${d.base}${path}`, { method, headers: { ...auth, origin: d.origin, 'content-type': type }, ...(body !== undefined && { body }), redirect: 'manual' });

describe('the viewer role', () => {
  it("answers 403 to every state-changing request, tickwork's and Bull Board's, and nothing changes", async () => {
    const dlqId = await deadLetterEmail(d, 'mail-dead');
    await d.queues.get('email').add('email.send', { to: 'a@example.com', subject: 's', body: 'b' }, { jobId: 'mail-1', delay: 60_000 });
    const schedules = createSchedules({ redis: d.redis, queues: d.queues, catalog });
    await schedules.upsert('report:user-1', { job: 'email.send', pattern: '0 9 * * *', tz: 'Europe/Lisbon', data: { to: 'a@example.com', subject: 's', body: 'b' } });
    const schedule = `/schedules/${encodeURIComponent('report:user-1')}`;
    const csrf = await token();
    const form = (extra: Record<string, string> = {}) => new URLSearchParams({ _csrf: csrf, ...extra }).toString();
    const ours = [
      [`${schedule}/pause`, form({ reason: 'viewer tries' })],
      [`${schedule}/resume`, form()],
      [`${schedule}/run`, form()],
      [`${schedule}/remove`, form()],
      ['/dead-letters/email/redrive-all', form()],
      ['/dead-letters/email/purge-all', form()],
      [`/dead-letters/email/${encodeURIComponent(dlqId)}/redrive`, form()],
      [`/dead-letters/email/${encodeURIComponent(dlqId)}/purge`, form()],
      ['/jobs/email/cancel', form({ jobId: 'mail-1' })],
    ] as const;
    for (const [path, body] of ours) {
      const res = await send('POST', path, VIEWER_AUTH, body, 'application/x-www-form-urlencoded');
      expect({ path, status: res.status, text: await res.text() }).toEqual({ path, status: 403, text: expect.stringContaining(`user "${VIEWER}" has the viewer role, which is read-only`) });
    }
    const board = boardChangeRoutes();
    expect(board.length).toBeGreaterThanOrEqual(20);
    for (const { method, path } of board) {
      const res = await send(method, path, VIEWER_AUTH, JSON.stringify({ name: 'email.send', data: {} }));
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 403 });
      expect(((await res.json()) as { error: string }).error).toContain('viewer role');
    }
    // Nothing changed: the dead letter, the delayed job, the queue's state; no cancel request.
    expect((await listDeadLetters(d.queues, 'email')).map((e) => e.dlqJobId)).toEqual([dlqId]);
    expect(await (await d.queues.get('email').getJob('mail-1'))?.getState()).toBe('delayed');
    expect(await d.queues.get('email').isPaused()).toBe(false);
    expect(await loadCancelRequests(d.redis, 'tw')).toEqual([]);
    expect(await schedules.get('report:user-1')).toMatchObject({ paused: null, version: 1 });
    expect(await d.queues.get('email').getJobCounts('wait')).toEqual({ wait: 0 });
    // Reading works, Bull Board's API included, and its queues say read-only.
    for (const path of ['/schedules', '/dead-letters', '/jobs', '/audit', '/capacity', '/api/audit']) expect((await fetch(`${d.base}${path}`, { headers: VIEWER_AUTH })).status).toBe(200);
    const queues = (await (await fetch(`${d.base}/queues/api/queues`, { headers: VIEWER_AUTH })).json()) as { queues: { name: string; readOnlyMode: boolean }[] };
    expect(queues.queues.length).toBeGreaterThan(0);
    expect(queues.queues.every((q) => q.readOnlyMode)).toBe(true);
    // Every refusal is in the log with the user and role.
    const refused = logLines.filter((l) => l.msg === 'dashboard action');
    expect(refused).toHaveLength(ours.length + board.length);
    expect(refused.every((l) => l.user === VIEWER && l.role === 'viewer' && l.status === 403)).toBe(true);
  });

  it('sees no action buttons on the pages', async () => {
    await deadLetterEmail(d, 'mail-dead');
    await createSchedules({ redis: d.redis, queues: d.queues, catalog }).upsert('report:user-2', { job: 'email.send', pattern: '0 9 * * *', tz: 'UTC', data: { to: 'a@example.com', subject: 's', body: 'b' } });
    for (const path of ['/dead-letters', '/jobs?queue=email', `/schedules/${encodeURIComponent('report:user-2')}`]) {
      const page = await (await fetch(`${d.base}${path}`, { headers: VIEWER_AUTH })).text();
      expect({ path, forms: page.match(/method="post"/g) ?? [] }).toEqual({ path, forms: [] });
      const admin = await (await fetch(`${d.base}${path}`, { headers: HASHED_ADMIN_AUTH })).text();
      expect((admin.match(/method="post"/g) ?? []).length).toBeGreaterThan(0);
    }
  });
});

describe('the admin role and the audit log', () => {
  it('an admin (scrypt hash) acts; each action is logged with user, role, method, target and status, and listed newest first', async () => {
    await deadLetterEmail(d, 'mail-dead');
    await d.queues.get('email').add('email.send', { to: 'a@example.com', subject: 's', body: 'b' }, { jobId: 'mail-1', delay: 60_000 });
    const csrf = await token();
    const cancel = await send('POST', '/jobs/email/cancel', HASHED_ADMIN_AUTH, new URLSearchParams({ _csrf: csrf, jobId: 'mail-1', reason: 'dup' }).toString(), 'application/x-www-form-urlencoded');
    expect([cancel.status, cancel.headers.get('location')]).toEqual([303, '/jobs?queue=email&flash=cancel-requested']);
    expect(await loadCancelRequests(d.redis, 'tw')).toEqual([expect.objectContaining({ jobId: 'mail-1', by: HASHED_ADMIN, reason: 'dup' })]);
    const unknown = await send('POST', '/jobs/email/cancel', HASHED_ADMIN_AUTH, new URLSearchParams({ _csrf: csrf, jobId: 'nope' }).toString(), 'application/x-www-form-urlencoded');
    expect(unknown.headers.get('location')).toBe('/jobs?queue=email&flash=not-found');
    const pause = await send('PUT', '/queues/api/queues/email/pause', HASHED_ADMIN_AUTH);
    expect(pause.status).toBe(200);
    expect(await d.queues.get('email').isPaused()).toBe(true);
    const redrive = await send('POST', '/dead-letters/email/redrive-all', HASHED_ADMIN_AUTH, new URLSearchParams({ _csrf: csrf }).toString(), 'application/x-www-form-urlencoded');
    expect(redrive.status).toBe(303);
    expect(await listDeadLetters(d.queues, 'email')).toEqual([]);

    const actions = logLines.filter((l) => l.msg === 'dashboard action').map(({ user, role, method, target, status, level }) => ({ user, role, method, target, status, level }));
    const expected = [
      { method: 'POST', target: '/jobs/email/cancel', status: 303 },
      { method: 'POST', target: '/jobs/email/cancel', status: 303 },
      { method: 'PUT', target: '/queues/api/queues/email/pause', status: 200 },
      { method: 'POST', target: '/dead-letters/email/redrive-all', status: 303 },
    ].map((a) => ({ user: HASHED_ADMIN, role: 'admin', level: 30, ...a }));
    expect(actions).toEqual(expected);
    expect(JSON.stringify(logLines)).not.toContain(csrf); // bodies (tokens, job data) are never logged

    // The audit stream, newest first, a page at a time (the stream write follows the response: wait for it).
    const audit = async (q: string) => (await (await fetch(`${d.base}/api/audit${q}`, { headers: VIEWER_AUTH })).json()) as { entries: { target: string; user: string; status: number }[]; next: string | null };
    await expect.poll(async () => (await audit('')).entries.length).toBe(4);
    const first = await audit('?limit=3');
    expect(first.entries.map((e) => e.target)).toEqual(['/dead-letters/email/redrive-all', '/queues/api/queues/email/pause', '/jobs/email/cancel']);
    const second = await audit(`?limit=3&before=${first.next ?? ''}`);
    expect(second).toEqual({ entries: [expect.objectContaining({ target: '/jobs/email/cancel', user: HASHED_ADMIN, status: 303 })], next: null });
    expect((await fetch(`${d.base}/api/audit?before=x`, { headers: VIEWER_AUTH })).status).toBe(400);
    expect(await (await fetch(`${d.base}/audit`, { headers: VIEWER_AUTH })).text()).toContain('/queues/api/queues/email/pause');
  });

  it('a wrong password for a hashed user is refused (401), as is a right password under another name', async () => {
    expect((await fetch(`${d.base}/schedules`, { headers: basicHeader(VIEWER, 'not-the-password') })).status).toBe(401);
    expect((await fetch(`${d.base}/schedules`, { headers: basicHeader('nobody', 'just-looking') })).status).toBe(401);
    expect((await fetch(`${d.base}/schedules`, { headers: VIEWER_AUTH })).status).toBe(200);
  });
});
