import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The monorepo root (the folder holding pnpm-workspace.yaml), found by walking up from this file, so
 * scripts work from src or dist and whatever the current directory is.
 */
export function repoRoot(from: string = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'pnpm-workspace.yaml'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no pnpm-workspace.yaml above ${from}: is this inside the tickwork repo?`);
  }
}
