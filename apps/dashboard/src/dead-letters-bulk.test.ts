/**
 * Bulk actions on dead letters: the entries ticked on the listing, or every entry a filtered listing shows
 * (a page at a time), re-driven or purged in one request; entries already gone are counted, not fatal; the
 * request goes back to the same filtered listing, never elsewhere.
 */
import { listDeadLetters } from '@tickwork/operations';
import { describe, expect, it } from 'vitest';
import { selectedValue } from './pages/dead-letters.js';
import { AUTH, deadLetterEmail, useDashboardPerFile, type TestDashboard } from './testing/dashboard-server.js';

let d: TestDashboard;
useDashboardPerFile((started) => (d = started));

async function tokenOn(path: string): Promise<{ page: string; token: string }> {
  const page = await (await d.get(path)).text();
  const token = /name="_csrf" value="([^"]+)"/.exec(page)?.[1];
  if (!token) throw new Error(`no CSRF token on ${path}`);
  return { page, token };
}

/** POSTs the bulk form as a browser would (repeated `ids`); returns status and Location. */
async function bulk(token: string, action: string, ids: string[], back: string) {
  const body = new URLSearchParams([['_csrf', token], ['action', action], ['back', back], ...ids.map((id): [string, string] => ['ids', id])]);
  const res = await fetch(`${d.base}/dead-letters/selected`, {
    method: 'POST',
    headers: { ...AUTH, origin: d.origin, 'content-type': 'application/x-www-form-urlencoded' },
    body: body.toString(),
    redirect: 'manual',
  });
  return { status: res.status, location: res.headers.get('location') };
}

describe('bulk dead-letter actions', () => {
  it('re-drive the ticked entries and purge others, counting one already gone, back on the same filtered listing', async () => {
    const ids = [];
    for (let i = 1; i <= 4; i++) ids.push(await deadLetter(`bulk-${i}`, 'smtp down'));
    const { page, token } = await tokenOn('/dead-letters?name=email.send');
    // Each row has its checkbox, tied to the bulk form.
    for (const id of ids) expect(page).toContain(`<input type="checkbox" name="ids" value="${selectedValue('email', id)}" form="bulk"`);
    expect(page).toContain('<form id="bulk" class="inline" method="post" action="/dead-letters/selected">');

    const picked = [selectedValue('email', ids[0] ?? ''), selectedValue('email', ids[1] ?? '')];
    expect(await bulk(token, 'redrive', picked, '/dead-letters?name=email.send&limit=50')).toEqual({
      status: 303,
      location: '/dead-letters?name=email.send&limit=50&flash=redriven&n=2',
    });
    expect((await listDeadLetters(d.queues, 'email')).length).toBe(2);
    expect(await d.queues.get('email').getJobCounts('wait')).toMatchObject({ wait: 2 });

    // One of these was re-driven just now: it is counted as gone, the other is purged.
    const again = [selectedValue('email', ids[1] ?? ''), selectedValue('email', ids[2] ?? '')];
    expect((await bulk(token, 'purge', again, '/dead-letters')).location).toBe('/dead-letters?flash=purged&n=1&gone=1');
    expect((await listDeadLetters(d.queues, 'email')).length).toBe(1);
    const flash = await (await d.get('/dead-letters?flash=purged&n=1&gone=1')).text();
    expect(flash).toContain('Purged 1 entry. 1 selected entry was no longer there');
  });

  it('re-drives every entry a filtered listing shows, leaving the rest; nothing selected or too many changes nothing', async () => {
    for (let i = 1; i <= 3; i++) await deadLetter(`alpha-${i}`, 'alpha failure');
    for (let i = 1; i <= 2; i++) await deadLetter(`beta-${i}`, 'beta failure');
    const { page, token } = await tokenOn('/dead-letters?reason=alpha');
    expect(page).toContain('Re-drive the 3 shown');
    const form = /<form class="inline" method="post" action="\/dead-letters\/selected">((?:(?!<\/form>)[\s\S])*?)Re-drive the 3 shown/.exec(page)?.[1] ?? '';
    const shown = [...form.matchAll(/name="ids" value="([^"]+)"/g)].map((m) => m[1] ?? '');
    expect(shown).toHaveLength(3);
    const back = /name="back" value="([^"]+)"/.exec(form)?.[1]?.replaceAll('&amp;', '&') ?? '';
    const res = await bulk(token, 'redrive', shown, back);
    expect(res.location).toMatch(/^\/dead-letters\?reason=alpha&limit=\d+&flash=redriven&n=3$/);
    expect((await listDeadLetters(d.queues, 'email')).length).toBe(2);
    expect(await (await d.get('/dead-letters?reason=alpha')).text()).toContain('No matching entries on this page.');

    expect((await bulk(token, 'redrive', [], '/dead-letters')).location).toBe('/dead-letters?flash=none-selected');
    const many = Array.from({ length: 501 }, (_, i) => selectedValue('email', `x-${i}`));
    expect((await bulk(token, 'purge', many, '/dead-letters')).location).toBe('/dead-letters?flash=too-many');
    // A back link elsewhere is not followed: the listing it is.
    expect((await bulk(token, 'redrive', [], 'https://evil.example/')).location).toBe('/dead-letters?flash=none-selected');
    expect((await bulk(token, 'redrive', [], '//evil.example/dead-letters')).location).toBe('/dead-letters?flash=none-selected');
    expect((await listDeadLetters(d.queues, 'email')).length).toBe(2);
  });
});

const deadLetter = (jobId: string, reason: string) => deadLetterEmail(d, jobId, { reason });
