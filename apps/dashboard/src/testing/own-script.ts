import { AUTO_REFRESH_SCRIPT } from '../pages/auto-refresh.js';

/**
 * A page's HTML without the one script tickwork's pages carry (auto-refresh, allowed by its hash), so a
 * test can assert that nothing else, such as markup from a job's data, put a script element in the page.
 */
export function withoutOwnScript(page: string): string {
  return page.replace(AUTO_REFRESH_SCRIPT.value, '');
}
