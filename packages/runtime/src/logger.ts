import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

/** Anything that may carry a secret. Pino replaces these values with [redacted] wherever they appear. */
const REDACT = [
  'password',
  '*.password',
  'redisUrl',
  '*.redisUrl',
  'webhookUrl',
  '*.webhookUrl',
  'authorization',
  '*.authorization',
  'headers.authorization',
];

export function createLogger(app: string, level: string = 'info'): Logger {
  return pino({
    name: app,
    level,
    base: { app },
    redact: { paths: REDACT, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
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
