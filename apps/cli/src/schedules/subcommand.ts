import type { CommandContext } from '../context.js';
import { UsageError } from '../usage-error.js';

/** One action of `tickwork schedules <action>`: its own usage (for `--help`) and the flags it accepts. */
export interface Subcommand {
  usage: string;
  summary: string;
  valueFlags: readonly string[];
  booleanFlags?: readonly string[];
  run(ctx: CommandContext, args: string[]): Promise<void>;
}

/** The one positional `<id>` an action takes; anything else is a usage error. */
export function idArg(args: string[]): string {
  const [id, extra] = args;
  if (id === undefined || id === '') throw new UsageError('missing <id>: the schedule id, e.g. reports.weekly:user-42');
  if (extra !== undefined) throw new UsageError(`one <id> only, got also ${JSON.stringify(extra)} (quote an id with spaces)`);
  return id;
}

/** A value flag as a string, undefined when absent; an empty value is refused with the flag's name. */
export function stringFlag(ctx: CommandContext, name: string, required = false): string | undefined {
  const v = ctx.flags[name];
  if (v === undefined) {
    if (required) throw new UsageError(`--${name} is required`);
    return undefined;
  }
  if (typeof v !== 'string' || v.trim() === '') throw new UsageError(`--${name} needs a value`);
  return v;
}
