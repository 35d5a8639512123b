/**
 * `tickwork schedules …` as real CLI processes against a private redis-server and the real schedule store:
 * the set-up the schedules-*.test.ts files share (each file its own Redis, so vitest runs them side by side).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { catalog } from '@tickwork/jobs';
import { createSchedules, type Schedules } from '@tickwork/schedules';
import { createLogger, QueueSet } from '@tickwork/core';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, beforeEach } from 'vitest';

export const CLI = fileURLToPath(new URL('../../dist/main.js', import.meta.url));
export const PREFIX = 'clisched';
export const ADD = ['schedules', 'add', 'email.send:user-1', '--job', 'email.send', '--tz', 'Europe/Berlin'];
export const DATA = JSON.stringify({ to: 'ann@example.com', subject: 'hi', body: 'morning' });

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface SchedulesCli {
  server: RedisServerHandle;
  queues: QueueSet;
  api: Schedules;
  /** A temporary folder, removed after the file's tests. */
  dir: string;
  /** Runs `tickwork <args>` (through bash when `stdin` is given, piped in); resolves with code and output. */
  cli(args: string[], stdin?: string, extraEnv?: Record<string, string>): Promise<CliResult>;
}

/** Registers the file's hooks (a private Redis, flushed before each test) and returns its handles, set once beforeAll ran. */
export function useSchedulesCli(): SchedulesCli {
  const h = {} as SchedulesCli;
  beforeAll(async () => {
    h.server = await startRedisServer();
    h.queues = new QueueSet(h.server.client(), PREFIX, createLogger('test', 'silent'));
    h.api = createSchedules({ redis: h.server.client(), queues: h.queues, catalog });
    h.dir = await mkdtemp(join(tmpdir(), 'tickwork-sched-'));
  });
  beforeEach(async () => {
    await h.server.client().flushdb();
  });
  afterAll(async () => {
    await h.queues?.close();
    await h.server?.stop();
    if (h.dir) await rm(h.dir, { recursive: true, force: true });
  });
  h.cli = async (args, stdin, extraEnv = {}) => {
    const env = { PATH: process.env.PATH ?? '', REDIS_URL: h.server.url, QUEUE_PREFIX: PREFIX, LOG_LEVEL: 'silent', ...extraEnv };
    const [file, argv] =
      stdin === undefined
        ? [process.execPath, [CLI, ...args]]
        : ['bash', ['-c', `printf '%s' "$INPUT" | "${process.execPath}" "${CLI}" "$@"`, 'bash', ...args]];
    try {
      const { stdout, stderr } = await promisify(execFile)(file, argv, { env: { ...env, INPUT: stdin ?? '' } });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };
  return h;
}
