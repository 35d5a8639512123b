/**
 * The Running page across queues: every queue's running jobs in one table, oldest first, with the queue,
 * a link to each job's page, how long it has been running, and a cancelling state once a cancel is
 * requested (until its handler stops). Jobs are made active by a BullMQ Worker taking them by hand
 * (`getNextJob`), so they stay running for as long as the test looks at them.
 */
import { Worker, type Job } from 'bullmq';
import { waitFor } from '@tickwork/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDashboard, VIEWER_AUTH, type TestDashboard } from './testing/dashboard-server.js';

let d: TestDashboard;
const takers: Worker[] = [];

beforeAll(async () => {
  d = await startDashboard('tw');
});
afterAll(async () => {
  await Promise.all(takers.map((w) => w.close(true)));
  await d?.close();
});

/** Adds a job to `queue` and takes it as a worker would: it is then active, with its start time set. */
async function running(queue: string, name: string, id: string): Promise<Job> {
  await d.queues.get(queue).add(name, {}, { jobId: id });
  const taker = new Worker(queue, null, { connection: d.target.client(), prefix: d.prefix });
  takers.push(taker);
  return waitFor(async () => (await taker.getNextJob(`token-${id}`, { block: false })) ?? undefined, { timeoutMs: 30_000, what: `${id} taken` });
}

const rowOf = (page: string, id: string) => new RegExp(`<tr>(?:(?!</tr>)[\\s\\S])*?<code>${id}</code>[\\s\\S]*?</tr>`).exec(page)?.[0] ?? '';

describe('the Running page', { timeout: 120_000 }, () => {
  it('lists every queue\'s running jobs oldest first, with queue, job link, state and time running; one queue on request', async () => {
    const first = await running('email', 'email.send', 'run-email-1');
    // The second starts a clear millisecond later, so "oldest first" has one answer.
    await waitFor(async () => (Date.now() > (first.processedOn ?? 0) + 2 ? true : undefined), { timeoutMs: 5000, what: 'a later millisecond' });
    await running('billing', 'billing.charge-monthly', 'run-billing-1');
    const page = await (await d.get('/jobs')).text();
    expect(page).toContain('<h2>Every queue: 2 running</h2>');
    expect(page).toContain('<th>Queue</th>');
    const email = rowOf(page, 'run-email-1');
    expect(email).toContain('<a href="/jobs?queue=email">email</a>');
    expect(email).toContain('<a href="/jobs/email/run-email-1">');
    expect(email).toContain('<span class="badge ok">running</span>');
    expect(email).toMatch(/<td class="num">\d+s<\/td>/); // running for
    expect(page.indexOf('run-email-1')).toBeLessThan(page.indexOf('run-billing-1')); // oldest first

    const billingOnly = await (await d.get('/jobs?queue=billing')).text();
    expect(billingOnly).toContain('<h2>billing: 1 running</h2>');
    expect(billingOnly).not.toContain('run-email-1');
    expect(billingOnly).not.toContain('<th>Queue</th>');
  });

  it('shows a job whose cancel was requested as cancelling, without a second Cancel, and returns to the view the form was on', async () => {
    const page = await (await d.get('/jobs')).text();
    const token = /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
    const res = await d.post('/jobs/email/cancel', { _csrf: token, jobId: 'run-email-1', reason: 'stuck', view: 'all' }, { origin: d.origin });
    expect({ status: res.status, location: res.headers.get('location') }).toEqual({ status: 303, location: '/jobs?flash=cancel-requested' });
    const after = await (await d.get('/jobs')).text();
    const email = rowOf(after, 'run-email-1');
    expect(email).toMatch(/<span class="badge stale" title="cancel requested by [^"]+: stuck">cancelling<\/span>/);
    expect(email).not.toContain('>Cancel</button>');
    expect(rowOf(after, 'run-billing-1')).toContain('>Cancel</button>');
  });

  it('a viewer sees the same list without forms; the every-queue view pages up to 20 and says so past it', async () => {
    const viewer = await (await fetch(`${d.base}/jobs`, { headers: VIEWER_AUTH })).text();
    expect(viewer).toContain('run-billing-1');
    expect(viewer).not.toContain('method="post"');
    const past = await d.get('/jobs?page=21');
    expect(past.status).toBe(400);
    expect(await past.text()).toContain('choose a queue to page further');
    expect((await d.get('/jobs?queue=email&page=21')).status).toBe(200);
  });
});
