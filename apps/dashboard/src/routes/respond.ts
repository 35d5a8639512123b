import type { Response } from 'express';
import type { SafeHtml } from '../html.js';
import { AUTO_REFRESH_CSP_SOURCE } from '../pages/auto-refresh.js';

/**
 * Our pages load nothing and run one script, the auto-refresh, allowed by its hash: the policy forbids any
 * other (so injected markup could not run even if escaping failed), allows the inline stylesheet, keeps
 * forms on this origin and refuses framing (a framed page could trick a click on a POST button).
 */
const CSP = `default-src 'none'; script-src ${AUTO_REFRESH_CSP_SOURCE}; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`;

export function sendPage(res: Response, page: SafeHtml, status = 200): void {
  res.status(status).set('Content-Security-Policy', CSP).type('html').send(page.value);
}
