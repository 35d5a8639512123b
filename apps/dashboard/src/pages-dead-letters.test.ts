import { listDeadLetters, redrivenJobId } from '@tickwork/operations';
import { describe, expect, it } from 'vitest';
import { deadLetterPath } from './pages/dead-letters.js';
import { deadLetterEmail, useDashboardPerFile, type TestDashboard } from './testing/dashboard-server.js';
import { withoutOwnScript } from './testing/own-script.js';

let d: TestDashboard;
useDashboardPerFile((started) => (d = started));

const XSS = '<script>alert("pwned")</script>';

/** One email.send in the email DLQ, its body carrying markup the pages must escape. */
const deadLetter = (jobId: string, reason = 'smtp down') => deadLetterEmail(d, jobId, { reason, body: `${jobId} ${XSS}` });

async function csrfToken(): Promise<string> {
  const page = await (await d.get('/dead-letters')).text();
  const token = /name="_csrf" value="([^"]+)"/.exec(page)?.[1];
  if (!token) throw new Error('no CSRF token on /dead-letters');
  return token;
}

const dlqIds = async () => (await listDeadLetters(d.queues, 'email')).map((e) => e.dlqJobId);

describe('dead-letter pages', () => {
  it('list counts per queue and each entry, escaping what the job carried', async () => {
    const id = await deadLetter('mail-1', `smtp said ${XSS}`);
    const res = await d.get('/dead-letters');
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toMatch(/<td>email<\/td><td><code>email\.dlq<\/code><\/td><td class="num">1<\/td>/);
    expect(page).toMatch(/<td>billing<\/td><td><code>billing\.dlq<\/code><\/td><td class="num">0<\/td>/);
    expect(page).toContain(`href="${deadLetterPath('email', id)}"`);
    expect(page).toContain('<code>mail-1</code>');
    expect(page).toContain('smtp said &lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;');
    expect(withoutOwnScript(page)).not.toContain('<script');

    const api = (await (await d.get('/api/dead-letters')).json()) as { counts: { queue: string; count: number }[]; entries: unknown[] };
    expect(api.counts).toContainEqual({ queue: 'email', count: 1 });
    expect(api.entries).toEqual([
      expect.objectContaining({ queue: 'email', dlqJobId: id, job: 'email.send', originalJobId: 'mail-1', reason: `smtp said ${XSS}`, attempts: 1, nominalTime: null }),
    ]);
  });

  it('shows one entry in full: payload as pretty JSON (escaped), stack, options; ids with % survive the URL', async () => {
    const id = await deadLetter('mail%2');
    expect(id).toContain('%25');
    const res = await d.get(deadLetterPath('email', id));
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain(`<code>${id}</code>`);
    expect(page).toContain('&quot;to&quot;: &quot;a@example.com&quot;,\n  &quot;subject&quot;'); // indented JSON
    expect(page).toContain('mail%2 &lt;script&gt;alert(\\&quot;pwned\\&quot;)&lt;/script&gt;');
    expect(withoutOwnScript(page)).not.toContain('<script');
    expect(page).toContain('Error: smtp down\n    at '); // the stack
    expect(page).toContain('email.send#mail%2'); // idempotency key
    expect((await d.get(deadLetterPath('email', 'nope@1'))).status).toBe(404);
    expect((await d.get(deadLetterPath('no-such-queue', id))).status).toBe(404);
  });

  it('refuses a POST without the right origin or token (403) and changes nothing', async () => {
    const id = await deadLetter('mail-3');
    const token = await csrfToken();
    const path = `${deadLetterPath('email', id)}/redrive`;
    const attempts: [Record<string, string>, Record<string, string>][] = [
      [{}, {}], // a bare cross-site form post with no headers a browser would add
      [{ _csrf: token }, {}], // token but neither Origin nor Referer
      [{ _csrf: token }, { origin: 'https://evil.example' }],
      [{ _csrf: token }, { origin: 'null' }],
      [{ _csrf: token }, { referer: 'https://evil.example/page' }],
      [{}, { origin: d.origin }], // right origin, no token
      [{ _csrf: 'x'.repeat(token.length) }, { origin: d.origin }],
      [{ _csrf: 'short' }, { origin: d.origin }],
    ];
    for (const [form, headers] of attempts) {
      const res = await d.post(path, form, headers);
      expect(res.status, JSON.stringify({ form, headers })).toBe(403);
      expect(await res.text()).toMatch(/^forbidden: /);
    }
    for (const action of ['purge', 'redrive']) expect((await d.post(`${deadLetterPath('email', id)}/${action}`, {}, { origin: 'https://evil.example' })).status).toBe(403);
    expect((await d.post('/dead-letters/email/redrive-all', { _csrf: token }, { origin: 'https://evil.example' })).status).toBe(403);
    expect(await dlqIds()).toEqual([id]);
    expect(await d.queues.get('email').getJobCounts('waiting', 'delayed')).toEqual({ waiting: 0, delayed: 0 });
  });

  it('re-drives one entry from the page: the job is back on its queue and gone from the DLQ', async () => {
    const id = await deadLetter('mail-4');
    const other = await deadLetter('mail-5');
    const res = await d.post(`${deadLetterPath('email', id)}/redrive`, { _csrf: await csrfToken() }, { origin: d.origin });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/dead-letters?flash=redriven&n=1');
    const back = await d.queues.get('email').getJob(redrivenJobId(id, 1));
    expect(back?.name).toBe('email.send');
    expect(back?.data).toMatchObject({ to: 'a@example.com', body: `mail-4 ${XSS}` });
    expect(await back?.getState()).toBe('waiting');
    expect(await dlqIds()).toEqual([other]);
    expect(await (await d.get('/dead-letters?flash=redriven&n=1')).text()).toContain('Re-drove 1 entry');

    // The entry is gone: a second click says so instead of failing.
    const again = await d.post(`${deadLetterPath('email', id)}/redrive`, { _csrf: await csrfToken() }, { origin: d.origin });
    expect(again.headers.get('location')).toBe('/dead-letters?flash=not-found');
  });

  it('re-drives all of a queue (Referer accepted when Origin is absent) and purges one', async () => {
    const a = await deadLetter('mail-6');
    const b = await deadLetter('mail-7');
    const token = await csrfToken();
    const all = await d.post('/dead-letters/email/redrive-all', { _csrf: token }, { referer: `${d.base}/dead-letters` });
    expect(all.status).toBe(303);
    expect(all.headers.get('location')).toBe('/dead-letters?flash=redriven&n=2');
    expect(await dlqIds()).toEqual([]);
    for (const id of [a, b]) expect(await d.queues.get('email').getJob(redrivenJobId(id, 1))).toBeTruthy();
    await d.queues.get('email').drain(); // so the next dead-lettering takes its own job, not a re-driven one

    const c = await deadLetter('mail-8');
    const purge = await d.post(`${deadLetterPath('email', c)}/purge`, { _csrf: token }, { origin: d.origin });
    expect(purge.headers.get('location')).toBe('/dead-letters?flash=purged&n=1');
    expect(await dlqIds()).toEqual([]);
    expect(await d.queues.get('email').getJob('mail-8')).toBeUndefined();
  });

  it('shows a job something else put in a DLQ, marked as not a tickwork entry, and purges it; re-drive-all skips it', async () => {
    const good = await deadLetter('mail-9');
    // What Bull Board's "add" wrote into a DLQ: an empty name and no data; and a job with unrelated data.
    const blank = await d.queues.get('email.dlq').add('', undefined);
    const odd = await d.queues.get('email.dlq').add('odd', { deadLetteredAt: 5, hello: XSS });
    const list = await d.get('/dead-letters');
    expect(list.status).toBe(200);
    const page = await list.text();
    expect(page.match(/not a tickwork entry<\/span>/g)).toHaveLength(2);
    expect(page).toContain('(no name)');
    expect(withoutOwnScript(page)).not.toContain('<script');
    const api = (await (await d.get('/api/dead-letters')).json()) as { counts: { queue: string; count: number }[]; entries: { dlqJobId: string; tickwork: boolean; reason: string }[] };
    expect(api.counts).toContainEqual({ queue: 'email', count: 3 });
    expect(api.entries.map((e) => [e.dlqJobId, e.tickwork])).toEqual(
      expect.arrayContaining([[good, true], [String(blank.id), false], [String(odd.id), false]]),
    );
    expect(api.entries.find((e) => e.dlqJobId === String(odd.id))?.reason).toMatch(/^not a tickwork dead letter \(/);
    const detail = await d.get(deadLetterPath('email', String(odd.id)));
    expect(detail.status).toBe(200);
    const detailPage = await detail.text();
    expect(detailPage).toContain('not a tickwork entry');
    expect(detailPage).toContain('&quot;hello&quot;');
    expect(detailPage).not.toContain('Re-drive');
    expect((await d.get(deadLetterPath('email', String(blank.id)))).status).toBe(200);

    const token = await csrfToken();
    const all = await d.post('/dead-letters/email/redrive-all', { _csrf: token }, { origin: d.origin });
    expect(all.headers.get('location')).toBe('/dead-letters?flash=redriven&n=1&left=2'); // the two foreign jobs stay
    expect(await d.queues.get('email').getJob(redrivenJobId(good, 1))).toBeTruthy();
    for (const id of [blank.id, odd.id]) {
      const purge = await d.post(`${deadLetterPath('email', String(id))}/purge`, { _csrf: token }, { origin: d.origin });
      expect(purge.headers.get('location')).toBe('/dead-letters?flash=purged&n=1');
    }
    expect(await d.queues.get('email.dlq').getJobCountByTypes('waiting', 'delayed', 'prioritized')).toBe(0);
  });

  it('shows only fixed flash messages, whatever the query string says', async () => {
    const page = await (await d.get(`/dead-letters?flash=${encodeURIComponent(XSS)}&n=${encodeURIComponent(XSS)}`)).text();
    expect(page).not.toContain('class="flash');
    expect(page).not.toContain('pwned');
  });

  it.each([
    ['GET', '/dead-letters'],
    ['GET', '/dead-letters/email/x@1'],
    ['GET', '/api/dead-letters'],
    ['POST', '/dead-letters/email/x@1/redrive'],
    ['POST', '/dead-letters/email/x@1/purge'],
    ['POST', '/dead-letters/email/redrive-all'],
  ])('requires credentials for %s %s', async (method, path) => {
    expect((await fetch(`${d.base}${path}`, { method, headers: { origin: d.origin } })).status).toBe(401);
  });
});
