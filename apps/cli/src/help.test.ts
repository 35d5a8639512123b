import { fileURLToPath } from 'node:url';
import { startApp } from '@tickwork/testkit';
import { describe, expect, it } from 'vitest';
import { commands } from './commands/index.js';

const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));

describe('tickwork <command> --help', () => {
  it.each(commands.map((c) => c.name))('%s --help prints its usage and exits 0, with no Redis needed', async (name) => {
    // A Redis nobody listens on: help must not connect.
    const app = startApp(CLI, { REDIS_URL: 'redis://127.0.0.1:1', LOG_LEVEL: 'silent' }, [name, '--help']);
    expect(await app.exited).toBe(0);
    const out = app.lines.join('\n');
    expect(out).toContain(`usage: tickwork ${name}`);
    expect(out).not.toMatch(/tickwork \S+: /);
  });
});
