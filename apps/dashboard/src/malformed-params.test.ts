/**
 * Every parameter a route parses from the query string or the path, given malformed: a 4xx that says what
 * is wrong, never a 500 (whose stack would end up in the log as the dashboard's failure). Real HTTP against
 * the real app and a private redis-server.
 */
import { catalog } from '@tickwork/jobs';
import { createSchedules } from '@tickwork/schedules';
import { beforeEach, describe, expect, it } from 'vitest';
import { deadLetterEmail, useDashboardPerFile, type TestDashboard } from './testing/dashboard-server.js';

let d: TestDashboard;
useDashboardPerFile((started) => (d = started));

/** A cursor as the DLQ listing makes them, with any position in it. */
const dlqCursor = (p: Record<string, unknown>) => Buffer.from(JSON.stringify(p)).toString('base64url');

beforeEach(async () => {
  // Something to page through, so the parameters reach Redis rather than an empty short cut.
  await deadLetterEmail(d, 'mail-1');
  await createSchedules({ redis: d.redis, queues: d.queues, catalog }).upsert('digest.user:user-1', { job: 'digest.user', pattern: '0 9 * * *', tz: 'UTC', data: { userId: 'user-1' } });
});

const BAD_GETS: [path: string, status: number][] = [
  // The audit log: ids Redis cannot read or cannot go before, limits out of range, a parameter twice.
  ['/audit?before=0-0', 200],
  ['/audit?before=99999999999999999999-0', 400],
  ['/audit?before=18446744073709551616-0', 400],
  ['/audit?before=1-99999999999999999999', 400],
  ['/audit?before=x', 400],
  ['/audit?before=1-0&before=2-0', 400],
  ['/audit?limit=0', 400],
  ['/audit?limit=1e2', 400],
  ['/audit?limit=99999999999999999999', 400],
  ['/api/audit?before=0-0', 200],
  ['/api/audit?before=99999999999999999999-0', 400],
  ['/api/audit?limit=-1', 400],
  ['/audit/refused?before=99999999999999999999-0', 400],
  ['/api/audit/refused?before=0-0', 200],
  ['/api/audit/refused?limit=abc', 400],
  // Dead letters: cursors (a huge offset, an unknown queue, not a cursor), limits, times, queues, repeats.
  [`/dead-letters?cursor=${dlqCursor({ q: 'email', s: 0, o: 1e20 })}`, 400],
  [`/dead-letters?cursor=${dlqCursor({ q: 'email', s: 0, o: 9007199254740991 })}`, 400],
  [`/dead-letters?cursor=${dlqCursor({ q: 'email', s: 1, o: 5e15, a: 'x' })}`, 400],
  [`/api/dead-letters?cursor=${dlqCursor({ q: 'email', s: 0, o: 1e20 })}`, 400],
  [`/api/dead-letters?cursor=${dlqCursor({ q: 'email', s: 2, o: 1e300 })}`, 400],
  [`/api/dead-letters?cursor=${dlqCursor({ q: 'nope', s: 0, o: 0 })}`, 400],
  [`/api/dead-letters?cursor=${dlqCursor({ q: 'email', s: 9, o: 0 })}`, 400],
  [`/api/dead-letters?cursor=${dlqCursor({ q: 'email', s: 0, o: -1 })}`, 400],
  ['/api/dead-letters?cursor=!!!', 400],
  ['/api/dead-letters?limit=0', 400],
  ['/api/dead-letters?limit=99999999999999999999', 400],
  ['/api/dead-letters?since=yesterday', 400],
  ['/api/dead-letters?since=2026-02-30T99:99', 400],
  ['/api/dead-letters?since=2026-01-02&until=2026-01-01', 400],
  ['/api/dead-letters?queue=nope', 400],
  ['/api/dead-letters?queue=email&queue=billing', 400],
  ['/dead-letters?limit=x', 400],
  ['/dead-letters/nope/1', 404],
  ['/dead-letters/email/nope', 404],
  // Ids that name one of the DLQ's own keys (a list, a hash of the queue's), and an id that does not decode.
  ['/dead-letters/email/wait', 404],
  ['/dead-letters/email/meta', 404],
  ['/dead-letters/email/%E0%A4%A', 400],
  ['/api/dead-letters/email/wait', 404],
  ['/api/dead-letters/email/events', 404],
  ['/api/dead-letters/nope/1', 404],
  // Running jobs: pages and queues.
  ['/jobs?page=abc', 400],
  ['/jobs?page=0', 400],
  ['/jobs?page=-1', 400],
  ['/jobs?page=1e3', 400],
  ['/jobs?page=99999999999999999999', 400],
  ['/jobs?page=1&page=2', 400],
  ['/jobs?queue=email&queue=billing', 400],
  ['/jobs?queue=nope', 404],
  // Schedules: listing limits, repeats, ids that do not exist or do not decode.
  ['/schedules?limit=0', 400],
  ['/schedules?limit=99999999999999999999', 400],
  ['/schedules?limit=1&limit=2', 400],
  ['/schedules?job=a&job=b', 400],
  ['/api/runtime-schedules?limit=abc', 400],
  ['/api/runtime-schedules?cursor=a&cursor=b', 400],
  ['/schedules/nope', 404],
  ['/schedules/%E0%A4%A', 400],
  ['/api/schedules/nope', 404],
  ['/api/schedules/%E0%A4%A', 400],
];

describe('malformed parameters', () => {
  it.each(BAD_GETS)('GET %s answers %i', async (path, status) => {
    const res = await d.get(path);
    expect({ path, status: res.status }).toEqual({ path, status });
    const text = await res.text();
    expect(text).not.toContain('internal error');
    expect(text).not.toMatch(/\n\s+at /); // no stack
  });

  it('ids and pages that reach Redis as odd values still page or say not found', async () => {
    // A cursor's name of the last entry may be anything: it is only compared.
    expect((await d.get(`/api/dead-letters?cursor=${dlqCursor({ q: 'email', s: 0, o: 1, a: 'wait' })}`)).status).toBe(200);
    expect((await d.get('/api/runtime-schedules?cursor=%FF%FE')).status).toBe(200);
    expect((await d.get('/jobs?queue=email&page=1000000')).status).toBe(200);
    expect((await d.get('/api/audit?before=1-0')).status).toBe(200);
  });

  it('POST actions with ids that name no entry or job answer as such, never 500', async () => {
    const page = await (await d.get('/jobs?queue=email')).text();
    const token = /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
    const post = (path: string, form: Record<string, string> = {}) => d.post(path, { _csrf: token, ...form }, { origin: d.origin });
    const cases: [path: string, form: Record<string, string>, status: number, location?: string][] = [
      ['/jobs/email/cancel', { jobId: 'wait' }, 303, '/jobs?queue=email&flash=not-found'],
      ['/jobs/email/cancel', { jobId: 'meta' }, 303, '/jobs?queue=email&flash=not-found'],
      ['/jobs/email/cancel', { jobId: '' }, 303, '/jobs?queue=email&flash=bad-input'],
      ['/jobs/nope/cancel', { jobId: '1' }, 303, '/jobs?queue=nope&flash=not-found'],
      ['/dead-letters/email/wait/purge', {}, 303, '/dead-letters?flash=not-found'],
      ['/dead-letters/email/meta/redrive', {}, 303, '/dead-letters?flash=not-found'],
      ['/dead-letters/nope/1/purge', {}, 404],
      ['/dead-letters/nope/purge-all', {}, 404],
      ['/schedules/nope/pause', { reason: 'x' }, 404],
      [`/schedules/${encodeURIComponent('digest.user:user-1')}/pause`, {}, 400],
      ['/schedules/%E0%A4%A/run', {}, 400],
    ];
    for (const [path, form, status, location] of cases) {
      const res = await post(path, form);
      expect({ path, status: res.status, location: res.headers.get('location') ?? undefined }).toEqual({ path, status, location });
    }
  });
});
