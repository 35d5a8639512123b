/**
 * What `pnpm test:compose` (compose-test.ts) runs its stacks with: child processes, the Docker engine (the
 * machine's, else ../shared/docker-sandbox) and the list of named checks whose summary is its last line.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { REPO_ROOT as root } from './paths.js';

export interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface Engine {
  what: string;
  /** The compose command (argv prefix) and the env every docker call needs (DOCKER_HOST for the sandbox). */
  compose: string[];
  env: NodeJS.ProcessEnv;
}

const started = Date.now();
/** The base images the Dockerfile and the compose files name; the sandbox builds stand-ins for them (.ci/run starts it early with the same list). */
const BASE_IMAGES = ['node:20-bookworm-slim', 'redis:7-bookworm'];

export function say(line: string): void {
  const secs = ((Date.now() - started) / 1000).toFixed(1).padStart(6);
  process.stdout.write(`compose: [${secs}s] ${line}\n`);
}

export function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<Result> {
  return new Promise((done) => {
    const child = spawn(cmd, args, { cwd: root, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const timer = setTimeout(() => {
      stderr += `\n(killed after ${opts.timeoutMs} ms)`;
      child.kill('SIGKILL');
    }, opts.timeoutMs ?? 60_000);
    child.once('error', (err) => {
      clearTimeout(timer);
      done({ code: null, stdout, stderr: `${stderr}${err.message}` });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

export function tail(text: string, lines: number): string {
  return text.trimEnd().split('\n').slice(-lines).map((l) => `    ${l}`).join('\n');
}

/** Plain Docker when it answers, else the sandbox engine (these machines have no image registry). */
export async function pickEngine(): Promise<Engine> {
  if ((await run('docker', ['info'], { timeoutMs: 20_000 })).code === 0) {
    if ((await run('docker', ['compose', 'version'])).code === 0) {
      return { what: 'docker compose (local engine)', compose: ['docker', 'compose'], env: process.env };
    }
    if ((await run('docker-compose', ['version'])).code === 0) {
      return { what: 'docker-compose (local engine)', compose: ['docker-compose'], env: process.env };
    }
    throw new Error('docker answers but neither `docker compose` nor `docker-compose` is installed');
  }
  const sandbox = resolve(root, '../shared/docker-sandbox');
  if (!existsSync(join(sandbox, 'start'))) {
    throw new Error(`\`docker info\` fails and there is no ${sandbox}/start: start Docker or put shared/ beside the repo`);
  }
  say(`no local Docker engine; starting the sandbox engine (${sandbox}/start, about a minute the first time)`);
  const start = await run(join(sandbox, 'start'), BASE_IMAGES, { timeoutMs: 15 * 60_000 });
  const host = /^DOCKER_HOST=(\S+)\s*$/m.exec(start.stdout)?.[1];
  if (start.code !== 0 || !host) throw new Error(`docker-sandbox/start failed (exit ${start.code}):\n${tail(start.stderr, 20)}`);
  return { what: `docker-compose 1.29 in the sandbox (${host})`, compose: [join(sandbox, 'compose')], env: { ...process.env, DOCKER_HOST: host } };
}

interface Check {
  name: string;
  ok: boolean;
  reason?: string;
}

const checks: Check[] = [];

/** Runs one named check; a thrown error fails it. Returns whether it passed, so later steps can depend on it. */
export async function check(name: string, fn: () => Promise<string | void>): Promise<boolean> {
  const t0 = Date.now();
  try {
    const note = await fn();
    say(`ok   ${name}${note ? ` (${note})` : ''} [${((Date.now() - t0) / 1000).toFixed(1)}s]`);
    checks.push({ name, ok: true });
    return true;
  } catch (err) {
    const reason = (err as Error).message;
    say(`FAIL ${name}: ${reason}`);
    checks.push({ name, ok: false, reason });
    return false;
  }
}

/** Whether any check so far failed. */
export function anyFailed(): boolean {
  return checks.some((c) => !c.ok);
}

/** A failure's reason in at most 20 lines (the stack's last states are at its end). */
function shorten(reason: string): string {
  const lines = reason.trimEnd().split('\n');
  const kept = lines.length <= 20 ? lines : [...lines.slice(0, 4), `... (${lines.length - 20} lines)`, ...lines.slice(-16)];
  return kept.join('\n    ');
}

/** Prints the summary line (always the last line) and returns the exit code. */
export function summary(): number {
  const failed = checks.filter((c) => !c.ok);
  say(`done in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  // The reason again, shortened: CI often shows only the end of the output, after the stacks' logs.
  for (const c of failed) process.stdout.write(`  failed: ${c.name}${c.reason ? `\n    ${shorten(c.reason)}` : ''}\n`);
  process.stdout.write(`compose: ${checks.length - failed.length} passed, ${failed.length} failed\n`);
  return failed.length === 0 ? 0 : 1;
}
