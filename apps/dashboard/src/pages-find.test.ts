/**
 * Find by id and the job page over real HTTP against a real Redis: a job wherever it is (a queue, the DLQ,
 * re-driven), a schedule, several matches, none; what a job page shows and links; malformed ids answered
 * 4xx; markup in job data escaped.
 */
import { catalog } from '@tickwork/jobs';
import { redriveDeadLetters, redrivenJobId } from '@tickwork/operations';
import { createSchedules } from '@tickwork/schedules';
import { waitFor } from '@tickwork/testkit';
import { Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { deadLetterPath } from './pages/dead-letters.js';
import { boardJobPath, findPath, jobPath, occurrenceAnchor, occurrencePath } from './pages/links.js';
import { schedulePath } from './pages/schedule-actions.js';
import { deadLetterEmail, useDashboardPerFile, VIEWER_AUTH, type TestDashboard } from './testing/dashboard-server.js';
import { withoutOwnScript } from './testing/own-script.js';

let d: TestDashboard;
useDashboardPerFile((started) => (d = started));

const XSS = '<script>alert("pwned")</script>';
const mail = (body: string) => ({ to: 'a@example.com', subject: 'hi', body });
/** The viewer's GET: searching changes nothing, so the read-only role may. */
const view = (path: string) => fetch(`${d.base}${path}`, { headers: VIEWER_AUTH, redirect: 'manual' });
const follow = (path: string) => fetch(`${d.base}${path}`, { headers: VIEWER_AUTH });

/** Takes the next email job as a worker would, and ends it with `end`. */
async function finish(end: (job: import('bullmq').Job, token: string) => Promise<unknown>): Promise<void> {
  const worker = new Worker('email', null, { connection: d.target.client(), prefix: d.queues.keyspace('email').bullPrefix });
  const job = await waitFor(() => worker.getNextJob('tok'), { what: 'take job' });
  await end(job, 'tok');
  await worker.close();
}

describe('find by id', () => {
  it('goes straight to a waiting job: its data escaped, its logs and progress, a Bull Board link', async () => {
    const job = await d.queues.get('email').add('email.send', mail(`hello ${XSS}`), { jobId: 'mail-find-1', attempts: 1 });
    await job.log(`first line ${XSS}`);
    await job.updateProgress({ sent: 3, of: 10 });

    const res = await view(findPath('mail-find-1'));
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(jobPath('email', 'mail-find-1'));
    const page = await (await follow(jobPath('email', 'mail-find-1'))).text();
    expect(page).toContain('<span class="badge waiting" id="state">waiting</span>');
    expect(page).toContain('hello &lt;script&gt;alert(\\&quot;pwned\\&quot;)&lt;/script&gt;');
    expect(page).toContain('first line &lt;script&gt;');
    expect(page).toContain('&quot;sent&quot;: 3');
    expect(page).toContain(`href="${boardJobPath('email', 'mail-find-1')}"`);
    expect(withoutOwnScript(page)).not.toContain('<script');
    // The search box is on the page, as on every page: a GET form.
    expect(page).toContain('<form class="find" method="get" action="/find" role="search">');
  });

  it('shows a completed job with its result and a failed one with its error and stack', async () => {
    await d.queues.get('email').add('email.send', mail('ok'), { jobId: 'mail-done' });
    await finish((job, token) => job.moveToCompleted({ messageId: '<m@x>' }, token, false));
    const done = await (await follow(jobPath('email', 'mail-done'))).text();
    expect(done).toContain('<span class="badge ok" id="state">completed</span>');
    expect(done).toMatch(/<pre id="result">\{\n {2}&quot;messageId&quot;: &quot;&lt;m@x&gt;&quot;\n\}<\/pre>/);

    await d.queues.get('email').add('email.send', mail('bad'), { jobId: 'mail-failed', attempts: 1 });
    await finish((job, token) => job.moveToFailed(new Error(`smtp said ${XSS}`), token));
    const failed = await (await follow(jobPath('email', 'mail-failed'))).text();
    expect(failed).toContain('<span class="badge failing" id="state">failed</span>');
    expect(failed).toContain('<p class="err" id="error">smtp said &lt;script&gt;');
    expect(failed).toContain('Error: smtp said &lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;\n    at ');
    expect(withoutOwnScript(failed)).not.toContain('<script');
  });

  it('follows a job into the DLQ and out again: the dead letter, then its re-drive, each linked', async () => {
    const dlqId = await deadLetterEmail(d, 'mail-dl');
    // The job left its queue; its id still finds it, and its page says where it went.
    const res = await view(findPath('mail-dl'));
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(jobPath('email', 'mail-dl'));
    const gone = await follow(jobPath('email', 'mail-dl'));
    expect(gone.status).toBe(200);
    const trail = await gone.text();
    expect(trail).toContain(`href="${deadLetterPath('email', dlqId)}"`);
    expect(trail).toMatch(/dead-lettered <time[^>]*>[^<]*<\/time> as dead letter .*<span class="badge ok">there now<\/span>/);
    // The DLQ id finds the entry, whose page links back to the job.
    expect((await view(findPath(dlqId))).headers.get('location')).toBe(deadLetterPath('email', dlqId));
    const entry = await (await follow(deadLetterPath('email', dlqId))).text();
    expect(entry).toContain(`href="${jobPath('email', 'mail-dl')}"`);
    expect(entry).toContain(`href="${boardJobPath('email.dlq', dlqId)}"`);

    await redriveDeadLetters({ queues: d.queues, queue: 'email', selector: { ids: [dlqId] }, catalog });
    const newId = redrivenJobId(dlqId, 1);
    const after = await (await follow(jobPath('email', 'mail-dl'))).text();
    expect(after).toMatch(/dead-lettered .* as dead letter .*<span class="badge neutral">gone<\/span>/);
    expect(after).toMatch(/re-driven .* as job <a href="[^"]+"><code>[^<]+<\/code><\/a> in <code>email<\/code> <span class="badge ok">there now<\/span>/);
    expect(after).toContain(`href="${jobPath('email', newId)}"`);
    // The re-driven job's page names the run it continues.
    const redriven = await (await follow(jobPath('email', newId))).text();
    expect(redriven).toContain(`This job is re-drive 1 of dead letter <code>${dlqId}</code>`);
    expect(redriven).toContain(`href="${jobPath('email', 'mail-dl')}"`);
    // A DLQ job's page is its dead-letter page.
    expect((await view(`/jobs/email.dlq/${encodeURIComponent(dlqId)}`)).headers.get('location')).toBe(deadLetterPath('email', dlqId));
  });

  it('links a scheduled run and its occurrence both ways, and finds a schedule by id', async () => {
    const api = createSchedules({ redis: d.redis, queues: d.queues, catalog });
    const id = 'digest:user-<b>42</b>';
    await api.upsert(id, { job: 'sessions.cleanup', pattern: '0 9 * * *', tz: 'Europe/Lisbon' });
    const { jobId, occurrence } = await api.runNow(id, { by: 'test' });
    const queue = catalog.require('sessions.cleanup').queue;

    const schedule = await (await follow(schedulePath(id))).text();
    expect(schedule).toContain(`<tr id="${occurrenceAnchor(occurrence).replace(/</g, '&lt;').replace(/>/g, '&gt;')}">`);
    expect(schedule).toContain(`href="${jobPath(queue, jobId)}"`);
    const job = await (await follow(jobPath(queue, jobId))).text();
    expect(job).toContain(`href="${occurrencePath(id, occurrence)}"`);

    expect((await view(findPath(id))).headers.get('location')).toBe(schedulePath(id));
    const scheduled = catalog.jobs.find((j) => j.schedule);
    expect((await view(findPath(scheduled?.name ?? ''))).headers.get('location')).toBe(schedulePath(scheduled?.name ?? ''));
  });

  it('lists several matches, and answers 404 when nothing has the id', async () => {
    await d.queues.get('email').add('email.send', mail('a'), { jobId: 'shared-id' });
    const other = catalog.queues.find((q) => q !== 'email') as string;
    await d.queues.get(other).add('x', {}, { jobId: 'shared-id' });
    const res = await view(findPath('shared-id'));
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain(`href="${jobPath('email', 'shared-id')}"`);
    expect(page).toContain(`href="${jobPath(other, 'shared-id')}"`);
    const api = (await (await follow('/api/find?id=shared-id')).json()) as { hits: { queue: string; path: string }[] };
    expect(api.hits.map((h) => h.queue).sort()).toEqual(['email', other].sort());

    const none = await view(findPath(`nothing ${XSS}`));
    expect(none.status).toBe(404);
    const text = await none.text();
    expect(text).toContain('id="no-match"');
    expect(text).toContain('nothing &lt;script&gt;');
    expect(withoutOwnScript(text)).not.toContain('<script');
    expect((await view(jobPath('email', 'never-was'))).status).toBe(404);
  });

  it('shows a job BullMQ cannot read as its raw fields, escaped', async () => {
    const key = `${d.queues.keyspace('email').bullPrefix}:email:raw-1`;
    await d.redis.hset(key, { name: 'email.send', data: `{not json ${XSS}`, opts: '{}', timestamp: String(Date.now()) });
    const res = await follow(jobPath('email', 'raw-1'));
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain('<span class="badge failing">unreadable</span>');
    expect(page).toContain('{not json &lt;script&gt;');
    expect(withoutOwnScript(page)).not.toContain('<script');
  });

  it('answers a malformed id or an unknown queue with 4xx, never 500', async () => {
    const cases: [string, number][] = [
      ['/find?id=', 400],
      ['/find?id=%20%20', 400],
      ['/find?id=a&id=b', 400],
      [`/find?id=${'x'.repeat(513)}`, 400],
      ['/find?id=a%00b', 400],
      ['/find?id=line%0Abreak', 400],
      ['/api/find?id=', 400],
      ['/api/find', 400],
      ['/jobs/email/a%00b', 400],
      [`/jobs/email/${'x'.repeat(600)}`, 400],
      ['/jobs/email/%E0%A4%A', 400],
      ['/jobs/no-such-queue/x', 404],
      ['/jobs/no-such.dlq/x', 404],
    ];
    for (const [path, status] of cases) expect({ path, status: (await view(path)).status }).toEqual({ path, status });
    // No id at all: what the box is for.
    expect((await view('/find')).status).toBe(200);
  });
});
