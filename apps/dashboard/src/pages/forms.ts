import { CSRF_FIELD } from '../csrf.js';
import { html, type SafeHtml } from '../html.js';

/**
 * A one-button POST form carrying the CSRF token; `fields` adds inputs before the button (e.g. a reason).
 * Pages get no token for a viewer (read-only role), and then render no button at all.
 */
export function action(path: string, label: string, token: string | undefined, danger = false, fields: SafeHtml | null = null): SafeHtml {
  if (token === undefined) return html``;
  return html`<form class="inline" method="post" action="${path}"><input type="hidden" name="${CSRF_FIELD}" value="${token}">${fields}<button type="submit" class="${danger ? 'danger' : ''}">${label}</button></form>`;
}
