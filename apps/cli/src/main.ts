#!/usr/bin/env node
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { TickworkError } from '@tickwork/core';
import { commands } from './commands/index.js';
import type { Command } from './commands/command.js';
import { createContext, type Flags } from './context.js';
import { loadDotEnv } from './dot-env.js';
import { loadCliEnv } from './env.js';
import { joinDashValues } from './flags.js';
import { UsageError } from './usage-error.js';

function help(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'usage: tickwork <command> [args] [--json]',
    '',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Env: REDIS_URL (default redis://127.0.0.1:6379), REDIS_CLUSTER_NODES (a Redis Cluster), QUEUE_PREFIX, JOBS_MODULE.',
  ].join('\n');
}

function parseFlags(command: Command, argv: string[]): { args: string[]; flags: Flags } {
  const options: Record<string, { type: 'string' | 'boolean' }> = { json: { type: 'boolean' } };
  for (const f of command.valueFlags ?? []) options[f] = { type: 'string' };
  for (const f of command.booleanFlags ?? []) options[f] = { type: 'boolean' };
  const args = joinDashValues(argv, command.valueFlags ?? [], Object.keys(options));
  try {
    const { values, positionals } = parseArgs({ args, options, allowPositionals: true, strict: true });
    return { args: positionals, flags: { ...values, json: values.json === true } };
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(`${help()}\n`);
    return name ? 0 : 2;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    process.stderr.write(`tickwork: unknown command "${name}"\n\n${help()}\n`);
    return 2;
  }
  // `tickwork <command> --help` is a question, not a mistake: usage on stdout, exit 0.
  if (rest.includes('--help') || rest.includes('-h')) {
    const { summary, usage } = command.actionHelp?.(rest) ?? command;
    process.stdout.write(`${summary}\nusage: ${usage}\n`);
    return 0;
  }
  let close: (() => Promise<void>) | undefined;
  let explain: (err: unknown) => unknown = (err) => err;
  let logLevel: string | undefined;
  try {
    const { args, flags } = parseFlags(command, rest);
    if (command.readsDotEnv) {
      // Names only: the values include the dashboard's password.
      const added = loadDotEnv(process.env, resolve('.env'));
      if (added.length > 0) process.stdout.write(`tickwork: read ${added.join(', ')} from .env\n`);
    }
    const env = loadCliEnv(process.env);
    logLevel = env.LOG_LEVEL;
    const ctx = await createContext(env, args, flags);
    close = ctx.close;
    explain = ctx.explain;
    await Promise.race([command.run(ctx), ctx.stalled]);
    return 0;
  } catch (thrown) {
    const err = explain(thrown);
    const json = rest.includes('--json');
    const message = err instanceof Error ? err.message : String(err);
    const kind = err instanceof Error ? err.name : 'Error';
    if (json) process.stdout.write(`${JSON.stringify({ error: { name: kind, message } })}\n`);
    if (err instanceof UsageError) {
      process.stderr.write(`tickwork ${name}: ${message}\nusage: ${(command.actionHelp?.(rest) ?? command).usage}\n`);
      return 2;
    }
    process.stderr.write(`tickwork ${name}: ${message}\n`);
    if (!(err instanceof TickworkError) && logLevel === 'debug') process.stderr.write(`${(err as Error).stack}\n`);
    return 1;
  } finally {
    await close?.();
  }
}

/**
 * Exits only once stdout has taken everything written to it: into a pipe, writes are asynchronous, and
 * exiting at once would cut the output at the pipe's buffer (64 KiB) with exit code 0. A write that
 * failed (the reader went away: EPIPE) makes the exit code non-zero, so a script sees partial output.
 */
async function exitAfterOutput(code: number): Promise<never> {
  let writeError: Error | undefined;
  process.stdout.on('error', (err) => (writeError ??= err));
  await new Promise<void>((resolve) => process.stdout.write('', (err) => ((writeError ??= err ?? undefined), resolve())));
  if (writeError) {
    process.stderr.write(`tickwork: could not write the output: ${writeError.message}\n`);
    process.exit(code === 0 ? 1 : code);
  }
  process.exit(code);
}

void main(process.argv.slice(2)).then(exitAfterOutput);
