import { readFile } from 'node:fs/promises';
import { UsageError } from './usage-error.js';

/**
 * The text of a payload argument: `@<path>` reads a file, `-` reads standard input, anything else is the
 * JSON itself. Files and stdin carry payloads past the OS limit on one argument (about 128 KiB on Linux).
 */
export async function readPayloadSource(raw: string, stdin: NodeJS.ReadableStream = process.stdin): Promise<string> {
  if (raw === '-') return readAll(stdin);
  if (!raw.startsWith('@')) return raw;
  const path = raw.slice(1);
  if (!path) throw new UsageError('--data @<file>: missing the file name after @');
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read the payload file ${JSON.stringify(path)}: ${(err as Error).message}`);
  }
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}
