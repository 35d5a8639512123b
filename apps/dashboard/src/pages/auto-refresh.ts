import { createHash } from 'node:crypto';
import { raw } from '../html.js';

/** How often a page with auto-refresh on reloads itself. */
export const AUTO_REFRESH_SECONDS = 15;

/**
 * Auto-refresh, switched by the header's checkbox and remembered in the browser (localStorage; on unless
 * switched off): the page reloads every AUTO_REFRESH_SECONDS, without its flash message, and waits while
 * the operator is typing in a field or has changed one (a cancel reason, a search) so nothing typed is lost.
 * A constant inline script allowed by its SHA-256 in the pages' Content-Security-Policy: no other script,
 * inline or loaded, can run on a tickwork page.
 */
const SOURCE = `(function () {
  var KEY = 'tickwork.autoRefresh';
  var box = document.getElementById('auto-refresh');
  if (!box) return;
  var stored = null;
  try { stored = window.localStorage.getItem(KEY); } catch (e) { /* storage refused: on, not remembered */ }
  box.checked = stored !== 'off';
  var timer = 0;
  function typing() {
    var active = document.activeElement;
    if (active && active !== box && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName)) return true;
    var fields = document.querySelectorAll('input:not([type=hidden]):not([type=checkbox]), textarea');
    for (var i = 0; i < fields.length; i++) if (fields[i].value !== fields[i].defaultValue) return true;
    return false;
  }
  function reload() {
    if (!box.checked) return;
    if (typing()) return schedule();
    var url = new URL(window.location.href);
    url.searchParams.delete('flash');
    window.location.replace(url.toString());
  }
  function schedule() {
    window.clearTimeout(timer);
    if (box.checked) timer = window.setTimeout(reload, ${AUTO_REFRESH_SECONDS * 1000});
  }
  box.addEventListener('change', function () {
    try { window.localStorage.setItem(KEY, box.checked ? 'on' : 'off'); } catch (e) { /* not remembered */ }
    schedule();
  });
  schedule();
})();`;

/** The script element every page carries (a constant: no data flows into it). */
export const AUTO_REFRESH_SCRIPT = raw(`<script>${SOURCE}</script>`);

/** The checkbox in the header that the script drives; without the script it does nothing. */
export const AUTO_REFRESH_TOGGLE = raw(
  `<label class="refresh" title="Reload this page every ${AUTO_REFRESH_SECONDS} s (remembered in this browser)"><input type="checkbox" id="auto-refresh"> Auto-refresh</label>`,
);

/** The CSP source that allows exactly this script. */
export const AUTO_REFRESH_CSP_SOURCE = `'sha256-${createHash('sha256').update(SOURCE).digest('base64')}'`;
