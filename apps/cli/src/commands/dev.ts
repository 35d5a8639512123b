import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { safeUrl, TickworkError } from '@tickwork/core';
import { Redis } from 'ioredis';
import type { Command } from './command.js';
import { UsageError } from '../usage-error.js';

const APPS = ['scheduler', 'worker', 'dashboard'] as const;
/** apps/cli/dist/commands -> repo root */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const STATE = join(ROOT, '.tickwork');

/**
 * `pnpm start`: scheduler + worker + dashboard on this machine. If nothing answers at REDIS_URL and
 * redis-server is installed, a private Redis is started with its data in .tickwork/ (git-ignored), so a
 * newcomer needs nothing but Node and redis-server.
 */
export const devCommand: Command = {
  name: 'dev',
  usage: 'tickwork dev',
  summary: 'Run scheduler, worker and dashboard locally (what `pnpm start` does); reads .env if there is one.',
  readsDotEnv: true,
  async run(ctx) {
    let redisUrl = ctx.env.REDIS_URL;
    let privateRedis: ChildProcess | undefined;
    // On a cluster (REDIS_CLUSTER_NODES, passed on to the apps) there is no single Redis to start in its place.
    if (ctx.env.REDIS_CLUSTER_NODES === undefined && !(await answers(redisUrl))) {
      const port = Number(new URL(redisUrl).port || 6379);
      if (spawnSync('redis-server', ['--version']).error) {
        throw new UsageError(`nothing answers at ${safeUrl(redisUrl)} and redis-server is not installed; install it (apt-get install redis-server) or set REDIS_URL`);
      }
      mkdirSync(join(STATE, 'redis'), { recursive: true });
      privateRedis = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--dir', join(STATE, 'redis'), '--appendonly', 'yes',
          '--hz', '100', '--maxmemory-policy', 'noeviction', '--save', ''],
        // Detached like the apps, so Ctrl-C does not take Redis away while they drain; stopped last.
        { stdio: 'ignore', detached: true },
      );
      redisUrl = `redis://127.0.0.1:${port}`;
      const deadline = Date.now() + 10_000;
      while (!(await answers(redisUrl))) {
        if (Date.now() > deadline) throw new UsageError(`started redis-server on port ${port} but it did not answer within 10 s`);
        await new Promise((r) => setTimeout(r, 100));
      }
      ctx.out.line(`tickwork: nothing answered at ${safeUrl(ctx.env.REDIS_URL)}, so started a private redis-server on port ${port} (data in .tickwork/redis)`);
    }

    const password = ctx.env.DASHBOARD_PASSWORD ?? devPassword();
    const dashboardPort = ctx.env.DASHBOARD_PORT;
    const children = APPS.map((app) =>
      spawn(process.execPath, [join(ROOT, 'apps', app, 'dist', 'main.js')], {
        stdio: 'inherit',
        // Own process group: a terminal's Ctrl-C reaches only us, and we forward one SIGTERM to each app.
        detached: true,
        // The apps parse their own env; pass ours through with the resolved Redis and password.
        // One PORT cannot serve three apps: the scheduler and worker take their defaults (3001, 3002) and
        // the dashboard DASHBOARD_PORT (default 3000).
        env: { ...process.env, PORT: app === 'dashboard' ? String(dashboardPort) : undefined, REDIS_URL: redisUrl, DASHBOARD_PASSWORD: password },
      }),
    );
    ctx.out.line(`tickwork: scheduler, worker and dashboard starting; dashboard at http://localhost:${dashboardPort}/schedules`);
    if (!ctx.env.DASHBOARD_PASSWORD) {
      ctx.out.line(`tickwork: dashboard login is admin with the password in .tickwork/dashboard-password (set DASHBOARD_PASSWORD to choose one)`);
    }
    // Something to watch at once: schedules fire at their real times (or every few seconds with
    // SCHEDULE_SPEEDUP=every=10s pnpm start), but one email goes through the worker right away.
    const welcome = ctx.catalog.get('email.send');
    if (welcome) {
      await ctx.enqueue()(welcome, { to: 'newcomer@example.com', subject: 'Welcome to tickwork', body: 'Your worker processed this job.' }, { jobId: 'dev-welcome' });
      ctx.out.line('tickwork: enqueued a welcome email.send job; watch for "email sent" in the log, and its entry in the Redis list tickwork:demo:{email}:outbox');
    }
    ctx.out.line('tickwork: try `pnpm tickwork schedules` and `pnpm tickwork enqueue <job> <json>` in another terminal; Ctrl-C stops everything');

    const exited = children.map((c, i) => new Promise<{ app: string; code: number | null }>((r) => c.once('exit', (code) => r({ app: APPS[i] ?? '?', code }))));
    let stopping = false;
    const stop = () => {
      if (stopping) return;
      stopping = true;
      for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    // If one app dies, stop the others (a half-running stack is more confusing than a stopped one) and
    // fail: an app that stopped by itself (bad password, port taken) is an error, even after the others started.
    const first = await Promise.race(exited);
    const unasked = !stopping;
    stop();
    await Promise.all(exited);
    privateRedis?.kill('SIGTERM');
    if (unasked) throw new AppStoppedError(first.app, first.code);
  },
};

async function answers(url: string): Promise<boolean> {
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 });
  probe.on('error', () => undefined); // the failed connect is the answer, not an error to report
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

/** A per-checkout random password, kept in .tickwork/ so it survives restarts and is never printed. */
function devPassword(): string {
  const file = join(STATE, 'dashboard-password');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(STATE, { recursive: true });
  const password = randomBytes(12).toString('base64url');
  writeFileSync(file, `${password}\n`, { mode: 0o600 });
  return password;
}

/** One of the apps `tickwork dev` runs stopped without being asked to (its own output says why). */
export class AppStoppedError extends TickworkError {
  override name = 'AppStoppedError';
  constructor(app: string, code: number | null) {
    super(`the ${app} stopped (exit code ${code ?? 'none'}), so everything was stopped; its output above says why`);
  }
}
