import { hashPassword, parsePasswordHash, verifyPassword } from '@tickwork/operations';
import type { Command } from './command.js';
import { UsageError } from '../usage-error.js';

const USAGE = 'tickwork hash-password [--user <name> [--role admin|viewer]] [--json]   (password on stdin, or prompted without echo)';

/**
 * Prints the scrypt hash of a password for DASHBOARD_USERS. The password comes from standard input (one
 * trailing newline dropped), or, at a terminal, from a prompt that does not echo and asks twice. It never
 * comes from an argument: arguments land in shell history and in `ps`.
 */
export const hashPasswordCommand: Command = {
  name: 'hash-password',
  usage: USAGE,
  summary: 'Hash a dashboard password for DASHBOARD_USERS (reads it from stdin or a prompt).',
  valueFlags: ['user', 'role'],
  async run(ctx) {
    const user = ctx.flags.user;
    const role = ctx.flags.role ?? 'admin';
    if (user !== undefined && (typeof user !== 'string' || !/^[A-Za-z0-9._@-]{1,64}$/.test(user))) throw new UsageError('--user must be 1 to 64 letters, digits or . _ @ -');
    if (role !== 'admin' && role !== 'viewer') throw new UsageError('--role must be admin or viewer');
    if (ctx.flags.role !== undefined && user === undefined) throw new UsageError('--role goes with --user');
    const password = process.stdin.isTTY ? await promptTwice() : stripNewline(await readAll(process.stdin));
    if (password.trim().length < 8) throw new UsageError('the password must have at least 8 characters besides leading and trailing spaces');
    const hash = await hashPassword(password);
    // Checked before printing: what is printed is known to verify.
    if (!(await verifyPassword(password, parsePasswordHash(hash)))) throw new Error('the new hash does not verify; nothing printed');
    const entry = typeof user === 'string' ? `${user}:${role}:${hash}` : undefined;
    ctx.out.result({ hash, ...(entry && { entry }) }, () => entry ?? hash);
  },
};

function stripNewline(text: string): string {
  return text.replace(/\r?\n$/, '');
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function promptTwice(): Promise<string> {
  const first = await promptHidden('Password: ');
  const again = await promptHidden('Again: ');
  if (first !== again) throw new UsageError('the two passwords differ; nothing printed');
  return first;
}

/** Reads one line from the terminal in raw mode, echoing nothing. Ctrl-C and Ctrl-D abort. */
function promptHidden(prompt: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.resume();
  stdin.setEncoding('utf8');
  return new Promise((resolve, reject) => {
    let typed = '';
    const done = (err?: Error) => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(typed);
    };
    const onData = (chunk: string) => {
      for (const c of chunk) {
        if (c === '\r' || c === '\n') return done();
        if (c === '\u0003' || c === '\u0004') return done(new UsageError('cancelled; nothing printed'));
        if (c === '\u007f' || c === '\b') typed = typed.slice(0, -1);
        else typed += c;
      }
    };
    stdin.on('data', onData);
  });
}
