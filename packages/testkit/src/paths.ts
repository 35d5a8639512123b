import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repo root, found from this file (packages/testkit/{src,dist}/paths.*). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** The built entry of an app, as the containers run it. */
export function appEntry(app: 'scheduler' | 'worker' | 'dashboard' | 'cli'): string {
  return resolve(REPO_ROOT, 'apps', app, 'dist', 'main.js');
}

/** Built fixture catalogs, for JOBS_MODULE. */
export function fixtureModule(name: string): string {
  return resolve(REPO_ROOT, 'packages', 'testkit', 'dist', 'fixtures', `${name}.js`);
}
