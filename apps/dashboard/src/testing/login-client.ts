import { request } from 'node:http';
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '@tickwork/core';
import { verifyPassword, type ParsedPasswordHash } from '@tickwork/operations';

export interface Answer {
  status: number;
  retryAfter: string | undefined;
  contentType: string | undefined;
  body: string;
}

export interface Attempt {
  user: string;
  password: string;
  /** A loopback address to connect from (127.0.0.0/8 is all loopback on Linux). */
  from?: string;
  path?: string;
  headers?: Record<string, string>;
}

/** One GET with Basic credentials, from a chosen local address, on a connection of its own. */
export function attempt(base: string, a: Attempt): Promise<Answer> {
  const { port } = new URL(base);
  const authorization = `Basic ${Buffer.from(`${a.user}:${a.password}`).toString('base64')}`;
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: a.path ?? '/schedules', localAddress: a.from ?? '127.0.0.1', agent: false, headers: { authorization, ...a.headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], contentType: res.headers['content-type'], body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** How many answers had each status, e.g. `{ 401: 10, 429: 190 }`. */
export function tally(answers: readonly Answer[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const a of answers) out[a.status] = (out[a.status] ?? 0) + 1;
  return out;
}

/** The real scrypt check, recording which hash each call was against: the number of checks a burst cost. */
export function recordingVerify(): { verify: typeof verifyPassword; calls: ParsedPasswordHash[] } {
  const calls: ParsedPasswordHash[] = [];
  return {
    calls,
    verify: (password, hash) => {
      calls.push(hash);
      return verifyPassword(password, hash);
    },
  };
}

/** A logger whose lines a test reads, parsed. */
export function capturedLogger(): { log: Logger; lines: Record<string, unknown>[]; text: () => string } {
  const raw: string[] = [];
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write: (chunk: Buffer, _e, done) => {
      for (const l of chunk.toString().split('\n').filter(Boolean)) {
        raw.push(l);
        lines.push(JSON.parse(l) as Record<string, unknown>);
      }
      done();
    },
  });
  return { log: createLogger('dashboard', 'info', stream), lines, text: () => raw.join('\n') };
}
