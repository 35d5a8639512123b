import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import type { Catalog } from './catalog.js';
import { TickworkError } from '../errors.js';

/**
 * Loads the catalog from `JOBS_MODULE` when set (a path to a built module exporting `catalog`), else
 * uses the default one. This lets a deployment (or a test) run its own job set with the stock apps.
 */
export async function loadCatalog(jobsModule: string | undefined, fallback: () => Promise<Catalog>): Promise<Catalog> {
  if (!jobsModule) return fallback();
  const url = pathToFileURL(resolve(jobsModule)).href;
  let mod: { catalog?: Catalog };
  try {
    mod = (await import(url)) as { catalog?: Catalog };
  } catch (err) {
    throw new TickworkError(`JOBS_MODULE ${jobsModule} could not be loaded: ${(err as Error).message}`);
  }
  if (!mod.catalog || !Array.isArray(mod.catalog.jobs)) {
    throw new TickworkError(`JOBS_MODULE ${jobsModule} must export "catalog" (from createCatalog([...]))`);
  }
  return mod.catalog;
}
