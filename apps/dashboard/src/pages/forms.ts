import { CSRF_FIELD } from '../csrf.js';
import { html, type SafeHtml } from '../html.js';

/** A one-button POST form carrying the CSRF token; `fields` adds inputs before the button (e.g. a reason). */
export function action(path: string, label: string, token: string, danger = false, fields: SafeHtml | null = null): SafeHtml {
  return html`<form class="inline" method="post" action="${path}"><input type="hidden" name="${CSRF_FIELD}" value="${token}">${fields}<button type="submit" class="${danger ? 'danger' : ''}">${label}</button></form>`;
}
