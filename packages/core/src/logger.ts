import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

/** Anything that may carry a secret. Pino replaces these values with [redacted] wherever they appear. */
const REDACT = [
  'password',
  '*.password',
  'redisUrl',
  '*.redisUrl',
  'databaseUrl',
  '*.databaseUrl',
  'connectionString',
  '*.connectionString',
  'webhookUrl',
  '*.webhookUrl',
  'authorization',
  '*.authorization',
  'headers.authorization',
];

/**
 * pino's error serializer copies every own property of an error. ioredis' ReplyError carries the failed
 * `command` with its arguments, and for a rejected HELLO/AUTH those are the Redis credentials: drop it.
 */
function serializeError(err: unknown): unknown {
  const out = pino.stdSerializers.err(err as Error) as unknown as Record<string, unknown>;
  if (out && typeof out === 'object' && 'command' in out) {
    const command = out.command as { name?: unknown } | undefined;
    out.command = { name: command?.name, args: '[redacted]' };
  }
  return out;
}

/** `destination` (default stdout) lets a test read the lines an app writes, redaction included. */
export function createLogger(app: string, level: string = 'info', destination?: pino.DestinationStream): Logger {
  const opts = {
    name: app,
    level,
    base: { app },
    serializers: { err: serializeError },
    redact: { paths: REDACT, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination ? pino(opts, destination) : pino(opts);
}

/** A URL safe to log: credentials and query string removed. */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.username) u.username = '***';
    if (u.password) u.password = '***';
    u.search = u.search ? '?***' : '';
    return u.toString();
  } catch {
    return '(unparseable url)';
  }
}
