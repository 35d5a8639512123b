import type { CommandContext } from '../context.js';

export interface Command {
  name: string;
  usage: string;
  summary: string;
  /** Flags that take a value (e.g. --queue billing). Every command also accepts --json. */
  valueFlags?: readonly string[];
  /** Flags that are on/off (e.g. --all, --dry-run). */
  booleanFlags?: readonly string[];
  /** For a command with actions: the action named in `args`, for its own `--help` and usage errors. */
  actionHelp?(args: readonly string[]): { summary: string; usage: string } | undefined;
  /** Reads `.env` in the current directory into the environment first (dot-env.ts): only `dev`. */
  readsDotEnv?: boolean;
  run(ctx: CommandContext): Promise<void>;
}
