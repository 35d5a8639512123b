import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Logger } from '@tickwork/core';

/** A pino logger whose JSON lines are kept in memory, for tests that assert on log output. */
export function captureLogger(): { log: Logger; lines: string[]; entries(): Record<string, unknown>[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(line);
      done();
    },
  });
  const log = pino({ level: 'debug' }, stream);
  return { log, lines, entries: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}
