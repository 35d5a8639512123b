import { createPgPool, migrateTickworkTables } from '@tickwork/exactly-once';
import { databaseUrl, safeUrl, TickworkError } from '@tickwork/core';
import type { CommandContext } from '../context.js';
import type { Command } from './command.js';
import { UsageError } from '../usage-error.js';

const USAGE = 'tickwork db migrate [--url <postgres url>] [--json]   (or set DATABASE_URL)';

/** The database could not be reached or refused the migration. The message names it without its password. */
export class MigrationError extends TickworkError {
  override name = 'MigrationError';
}

/** Node reports a refused connection to a name with several addresses as an AggregateError with no message. */
function reason(err: unknown): string {
  const e = err as Error & { code?: string; errors?: Error[] };
  return e.message || e.errors?.[0]?.message || e.code || String(err);
}

function databaseFrom(ctx: CommandContext): string {
  const flag = ctx.flags.url;
  if (flag !== undefined && (typeof flag !== 'string' || flag === '')) throw new UsageError('--url needs a postgres:// URL');
  const url = flag ?? ctx.env.DATABASE_URL;
  if (url === undefined || url === '') throw new UsageError('say which database: --url postgres://... or DATABASE_URL');
  const parsed = databaseUrl.safeParse(url);
  if (!parsed.success) throw new UsageError(`the database URL ${parsed.error.issues[0]?.message ?? 'is invalid'}`);
  return url;
}

export const dbCommand: Command = {
  name: 'db',
  usage: USAGE,
  summary: "PostgreSQL: create tickwork's tables (tickwork_steps, tickwork_outbox) if they are missing.",
  valueFlags: ['url'],
  async run(ctx) {
    const [sub, ...extra] = ctx.args;
    if (sub !== 'migrate') throw new UsageError(sub === undefined ? 'say what to do: migrate' : `unknown db command "${sub}"; known: migrate`);
    if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
    const url = databaseFrom(ctx);
    const pool = createPgPool(url, ctx.log, { max: 1 });
    try {
      await migrateTickworkTables(pool);
    } catch (err) {
      throw new MigrationError(`could not migrate ${safeUrl(url)}: ${reason(err)}`);
    } finally {
      await pool.end();
    }
    const tables = ['tickwork_steps', 'tickwork_outbox'];
    ctx.out.result({ database: safeUrl(url), tables }, () => `${tables.join(' and ')} are in place in ${safeUrl(url)}`);
  },
};
