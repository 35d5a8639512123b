import type { Response } from 'express';
import type { SafeHtml } from '../html.js';

/**
 * Our pages load nothing and run no script: the policy forbids both (so injected markup could not run
 * even if escaping failed), allows the inline stylesheet, keeps forms on this origin and refuses framing
 * (a framed page could trick a click on a POST button).
 */
const CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export function sendPage(res: Response, page: SafeHtml, status = 200): void {
  res.status(status).set('Content-Security-Policy', CSP).type('html').send(page.value);
}
