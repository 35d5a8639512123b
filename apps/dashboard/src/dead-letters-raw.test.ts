/**
 * A dead letter whose data is not JSON (something other than tickwork wrote it, or wrote it wrong): listed,
 * shown as stored, exported and purged on its own, leaving the other entries alone. Real HTTP, private Redis.
 */
import { listDlqItems } from '@tickwork/operations';
import { describe, expect, it } from 'vitest';
import { deadLetterPath } from './pages/dead-letters.js';
import { deadLetterEmail, useDashboardPerFile, type TestDashboard } from './testing/dashboard-server.js';

let d: TestDashboard;
useDashboardPerFile((started) => (d = started));

const RAW = '{"to": "a@example.com", <b>not json';

/** A job in the email DLQ whose stored data is RAW. */
async function rawDeadLetter(id: string): Promise<void> {
  const dlq = d.queues.get('email.dlq');
  await dlq.add('email.send', { placeholder: true }, { jobId: id });
  await d.redis.hset(dlq.toKey(id), 'data', RAW);
}

async function csrfToken(): Promise<string> {
  const page = await (await d.get('/dead-letters')).text();
  const token = /name="_csrf" value="([^"]+)"/.exec(page)?.[1];
  if (!token) throw new Error('no CSRF token on /dead-letters');
  return token;
}

describe('a dead letter that is not JSON', () => {
  it('is listed, shown as stored (escaped), exported as JSON, and purged on its own', async () => {
    const kept = await deadLetterEmail(d, 'mail-1');
    await rawDeadLetter('raw-1');

    const listing = (await (await d.get('/api/dead-letters')).json()) as { entries: { dlqJobId: string; tickwork: boolean; reason: string }[] };
    expect(listing.entries).toContainEqual(expect.objectContaining({ dlqJobId: 'raw-1', tickwork: false, reason: 'not a tickwork dead letter (its data is not JSON)' }));

    const page = await d.get(deadLetterPath('email', 'raw-1'));
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<pre id="raw-data">{&quot;to&quot;: &quot;a@example.com&quot;, &lt;b&gt;not json</pre>');
    expect(html).not.toContain('<b>not json');
    expect(html).toContain(`href="/api${deadLetterPath('email', 'raw-1')}"`);
    expect(html).toContain('/purge"'); // its own purge button

    const exported = await d.get(`/api${deadLetterPath('email', 'raw-1')}`);
    expect(exported.status).toBe(200);
    expect(await exported.json()).toMatchObject({ dlqQueue: 'email.dlq', dlqJobId: 'raw-1', entry: null, foreign: { name: 'email.send', data: null, raw: RAW } });
    // A tickwork entry exports too, whole.
    expect(await (await d.get(`/api${deadLetterPath('email', kept)}`)).json()).toMatchObject({ dlqJobId: kept, entry: { originalJobId: 'mail-1', jobName: 'email.send' } });

    const purge = await d.post(`${deadLetterPath('email', 'raw-1')}/purge`, { _csrf: await csrfToken() }, { origin: d.origin });
    expect([purge.status, purge.headers.get('location')]).toEqual([303, '/dead-letters?flash=purged&n=1']);
    expect((await listDlqItems(d.queues, 'email')).map((i) => i.dlqJobId)).toEqual([kept]);
    expect((await d.get(deadLetterPath('email', 'raw-1'))).status).toBe(404);
  });

  it('is skipped, not failed on, by a re-drive of the whole queue', async () => {
    await deadLetterEmail(d, 'mail-2');
    await rawDeadLetter('raw-2');
    const redrive = await d.post('/dead-letters/email/redrive-all', { _csrf: await csrfToken() }, { origin: d.origin });
    expect([redrive.status, redrive.headers.get('location')]).toEqual([303, '/dead-letters?flash=redriven&n=1&left=1']);
    expect((await listDlqItems(d.queues, 'email')).map((i) => i.dlqJobId)).toEqual(['raw-2']);
    expect(await d.queues.get('email').getJobCounts('wait')).toEqual({ wait: 1 }); // the re-driven one
  });
});
