import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { TickworkError } from '@tickwork/core';

/**
 * Adds the variables of a `.env` file to `env`, for `tickwork dev` (`pnpm start`): the same file docker
 * compose reads, so one `DASHBOARD_PASSWORD=...` line serves both ways of running tickwork. A variable
 * already set in the environment wins over the file, as in compose. The file is optional: none, no change.
 * Returns the names it added (never the values: the file holds a password).
 *
 * Only `dev` reads it: the other commands act on whichever Redis the environment names, and a `.env` of
 * some other project in the current directory must not point a `dlq purge` elsewhere.
 */
export function loadDotEnv(env: NodeJS.ProcessEnv, file: string): string[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new DotEnvUnreadableError(file, err as Error);
  }
  const added: string[] = [];
  for (const [name, value] of Object.entries(parseEnv(text))) {
    if (env[name] !== undefined || value === undefined) continue;
    env[name] = value;
    added.push(name);
  }
  return added;
}

/** A `.env` that exists but cannot be read (a directory, no permission): said, rather than silently skipped. */
export class DotEnvUnreadableError extends TickworkError {
  override name = 'DotEnvUnreadableError';
  constructor(file: string, cause: Error) {
    super(`could not read ${file}: ${cause.message}`);
  }
}
