/**
 * `pnpm test:compose`: builds the images and runs docker-compose.yml for real, with three workers, then
 * checks the walking skeleton end to end (health, CLI in a container, a job processed by a worker replica,
 * the dashboard's auth). Uses the machine's Docker when `docker info` works, else the private engine of
 * ../shared/docker-sandbox. Always tears the stack down (`down -v`). Last line: `compose: N passed, M failed`.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from './free-port.js';
import { REPO_ROOT as root } from './paths.js';
import { waitFor } from './wait-for.js';

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface Engine {
  what: string;
  /** The compose command (argv prefix) and the env every docker call needs (DOCKER_HOST for the sandbox). */
  compose: string[];
  env: NodeJS.ProcessEnv;
}

const started = Date.now();
const WORKERS = 3;
/** The base images the Dockerfile and docker-compose.yml name; the sandbox builds stand-ins for them. */
const BASE_IMAGES = ['node:20-bookworm-slim', 'redis:7-bookworm'];
/** email.send appends here (packages/jobs/src/demo-data.ts, DEMO_KEYS.outbox). */
const OUTBOX_KEY = 'tickwork:demo:{email}:outbox';

function say(line: string): void {
  const secs = ((Date.now() - started) / 1000).toFixed(1).padStart(6);
  process.stdout.write(`compose: [${secs}s] ${line}\n`);
}

function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<Result> {
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

function tail(text: string, lines: number): string {
  return text.trimEnd().split('\n').slice(-lines).map((l) => `    ${l}`).join('\n');
}

/** Plain Docker when it answers, else the sandbox engine (these machines have no image registry). */
async function pickEngine(): Promise<Engine> {
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
}

const checks: Check[] = [];

/** Runs one named check; a thrown error fails it. Returns whether it passed, so later steps can depend on it. */
async function check(name: string, fn: () => Promise<string | void>): Promise<boolean> {
  const t0 = Date.now();
  try {
    const note = await fn();
    say(`ok   ${name}${note ? ` (${note})` : ''} [${((Date.now() - t0) / 1000).toFixed(1)}s]`);
    checks.push({ name, ok: true });
    return true;
  } catch (err) {
    say(`FAIL ${name}: ${(err as Error).message}`);
    checks.push({ name, ok: false });
    return false;
  }
}

/** Prints the summary line (always the last line) and returns the exit code. */
function summary(): number {
  const failed = checks.filter((c) => !c.ok);
  say(`done in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  for (const c of failed) process.stdout.write(`  failed: ${c.name}\n`);
  process.stdout.write(`compose: ${checks.length - failed.length} passed, ${failed.length} failed\n`);
  return failed.length === 0 ? 0 : 1;
}

async function main(): Promise<void> {
  let engine: Engine;
  try {
    engine = await pickEngine();
  } catch (err) {
    await check('a Docker engine is available', () => Promise.reject(err));
    return;
  }
  say(`engine: ${engine.what}`);

  const project = `tickwork-ct-${Date.now().toString(36)}-${process.pid}`;
  const password = randomBytes(12).toString('hex');
  const hostPort = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...engine.env,
    DASHBOARD_USER: 'admin',
    DASHBOARD_PASSWORD: password,
    DASHBOARD_HOST_PORT: String(hostPort),
  };
  const [composeCmd = 'docker', ...composePrefix] = engine.compose;
  const compose = (args: string[], timeoutMs = 60_000) =>
    run(composeCmd, [...composePrefix, '-f', 'docker-compose.yml', '-p', project, ...args], { env, timeoutMs });
  const composeOk = async (args: string[], timeoutMs?: number) => {
    const r = await compose(args, timeoutMs);
    if (r.code !== 0) throw new Error(`compose ${args.join(' ')} exited ${r.code}:\n${tail(r.stderr || r.stdout, 15)}`);
    return r.stdout;
  };
  const docker = (args: string[]) => run('docker', args, { env: engine.env });

  let tornDown = false;
  const down = async () => {
    if (tornDown) return;
    tornDown = true;
    say(`tearing down (down -v) project ${project}`);
    const r = await compose(['down', '-v', '--remove-orphans'], 180_000);
    if (r.code !== 0) say(`WARN down -v exited ${r.code}:\n${tail(r.stderr, 10)}`);
    // The images are tagged after the one-off project; untag them so runs do not pile up images.
    // --no-prune keeps their parent layers, which are the build cache of the next run.
    const images = await docker(['images', '--filter', `reference=${project}*`, '--format', '{{.Repository}}:{{.Tag}}']);
    const tags = images.stdout.split('\n').filter(Boolean);
    if (tags.length > 0) await docker(['image', 'rm', '--no-prune', ...tags]);
  };
  const interrupted = (signal: NodeJS.Signals) => {
    say(`${signal}: stopping`);
    void down().finally(() => {
      summary();
      process.exit(130);
    });
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);

  try {
    say(`project ${project}: building images and starting with ${WORKERS} workers (the first build takes a few minutes)`);
    const upLog = join(tmpdir(), `${project}-up.log`);
    const up = await check(`stack builds and starts (up -d --build --scale worker=${WORKERS})`, async () => {
      const r = await compose(['up', '-d', '--build', '--scale', `worker=${WORKERS}`], 30 * 60_000);
      if (r.code !== 0) {
        writeFileSync(upLog, `${r.stdout}\n${r.stderr}`);
        throw new Error(`exit ${r.code}; full output in ${upLog}:\n${tail(`${r.stdout}\n${r.stderr}`, 40)}`);
      }
    });
    if (!up) return;

    const expected: Record<string, number> = { redis: 1, scheduler: 1, worker: WORKERS, dashboard: 1 };
    const total = Object.values(expected).reduce((a, b) => a + b, 0);
    let lastStates = '';
    const healthy = await check(`all ${total} containers healthy`, async () => {
      try {
        await waitFor(
          async () => {
            const ids = (await composeOk(['ps', '-q'])).split('\n').filter(Boolean);
            if (ids.length === 0) return false;
            const r = await docker([
              'inspect',
              '--format',
              '{{index .Config.Labels "com.docker.compose.service"}} {{.Name}} {{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}',
              ...ids,
            ]);
            lastStates = r.stdout.trim();
            const rows = lastStates.split('\n').map((l) => l.split(' '));
            return Object.entries(expected).every(
              ([svc, n]) => rows.filter(([s, , status, health]) => s === svc && status === 'running' && health === 'healthy').length === n,
            );
          },
          { timeoutMs: 180_000, intervalMs: 1000, what: 'every container running and healthy' },
        );
      } catch (err) {
        throw new Error(`${(err as Error).message}; last states:\n${tail(lastStates, 10)}`);
      }
      return `${WORKERS} workers`;
    });
    if (!healthy) {
      const logs = await compose(['logs', '--no-color', '--tail', '20']);
      process.stdout.write(`${tail(logs.stdout, 80)}\n`);
      return;
    }

    await check('tickwork CLI runs in the scheduler container (tickwork jobs)', async () => {
      const out = await composeOk(['exec', '-T', 'scheduler', 'tickwork', 'jobs', '--json']);
      if (!out.includes('"email.send"')) throw new Error(`email.send not listed:\n${tail(out, 10)}`);
    });

    const jobId = `compose-test-${randomBytes(4).toString('hex')}`;
    const subject = `compose test ${jobId}`;
    const enqueued = await check('tickwork enqueue email.send from a worker container', async () => {
      const payload = JSON.stringify({ to: 'compose-test@example.com', subject, body: 'sent by pnpm test:compose' });
      const out = await composeOk(['exec', '-T', 'worker', 'tickwork', 'enqueue', 'email.send', payload, '--id', jobId, '--json']);
      const result = JSON.parse(out) as { id?: string };
      if (result.id !== jobId) throw new Error(`expected id ${jobId}, got ${out.trim()}`);
      return jobId;
    });

    if (enqueued) {
      await check(`the email lands in ${OUTBOX_KEY}`, async () => {
        await waitFor(
          async () => {
            const out = await composeOk(['exec', '-T', 'redis', 'redis-cli', 'LRANGE', OUTBOX_KEY, '0', '-1']);
            return out.split('\n').some((line) => line.includes(subject));
          },
          { timeoutMs: 60_000, intervalMs: 1000, what: `an outbox entry with subject "${subject}"` },
        );
      });

      await check('a worker replica logged the job as completed', async () =>
        waitFor(
          async () => {
            const out = await composeOk(['logs', '--no-color', 'worker']);
            for (const line of out.split('\n')) {
              const m = /^(\S+)\s+\|\s(\{.*\})\s*$/.exec(line);
              if (!m?.[2]) continue;
              const entry = JSON.parse(m[2]) as { msg?: string; jobId?: string };
              if (entry.msg === 'job completed' && entry.jobId === jobId) return `by ${m[1]}`;
            }
            return false;
          },
          { timeoutMs: 30_000, intervalMs: 1000, what: `a "job completed" log line for ${jobId} in the worker logs` },
        ),
      );
    }

    const published = (await compose(['port', 'dashboard', '3000'])).stdout.trim().split('\n')[0] ?? '';
    const port = /:(\d+)$/.exec(published)?.[1];
    const base = `http://127.0.0.1:${port}`;
    const get = (path: string, auth?: string) =>
      fetch(`${base}${path}`, auth ? { headers: { authorization: `Basic ${Buffer.from(auth).toString('base64')}` } } : {});
    const expectStatus = async (path: string, status: number, auth?: string) => {
      if (!port) throw new Error(`compose port dashboard 3000 printed "${published}"`);
      const res = await get(path, auth);
      await res.arrayBuffer();
      if (res.status !== status) throw new Error(`GET ${path} answered ${res.status}, expected ${status}`);
      return `${base}${path} -> ${res.status}`;
    };
    await check('dashboard /healthz answers without credentials', () => expectStatus('/healthz', 200));
    await check('dashboard /readyz answers without credentials', () => expectStatus('/readyz', 200));
    await check('dashboard answers 401 without credentials', () => expectStatus('/', 401));
    await check('dashboard answers 401 with a wrong password', () => expectStatus('/', 401, 'admin:wrong'));
    await check('dashboard answers 200 with DASHBOARD_USER/DASHBOARD_PASSWORD', () => expectStatus('/', 200, `admin:${password}`));
    if (enqueued) {
      // Bull Board's own JSON API (what its page loads): proves the dashboard reads the same Redis.
      await check('dashboard lists the email queue with the completed job', async () => {
        const res = await get('/queues/api/queues', `admin:${password}`);
        if (res.status !== 200) throw new Error(`GET /queues/api/queues answered ${res.status}`);
        const body = (await res.json()) as { queues?: { name: string; counts?: Record<string, number> }[] };
        const email = body.queues?.find((q) => q.name === 'email');
        if (!email) throw new Error(`no "email" queue among ${body.queues?.map((q) => q.name).join(', ')}`);
        if ((email.counts?.completed ?? 0) < 1) throw new Error(`email queue counts: ${JSON.stringify(email.counts)}`);
        return `completed: ${email.counts?.completed}`;
      });
    }

    await check('workers stop cleanly on SIGTERM within the grace period (exit 0)', async () => {
      const ids = (await composeOk(['ps', '-q', 'worker'])).split('\n').filter(Boolean);
      await composeOk(['stop', 'worker'], 120_000);
      const codes = (await docker(['inspect', '--format', '{{.State.ExitCode}}', ...ids])).stdout.split('\n').filter(Boolean);
      if (codes.length !== WORKERS || codes.some((c) => c !== '0')) throw new Error(`worker exit codes: ${codes.join(', ')}`);
      const logs = await composeOk(['logs', '--no-color', 'worker']);
      const clean = logs.split('\n').filter((l) => l.includes('"stopped cleanly"')).length;
      if (clean < WORKERS) throw new Error(`${clean} of ${WORKERS} workers logged "stopped cleanly"`);
      return `${WORKERS} workers drained`;
    });

    if (checks.some((c) => !c.ok)) {
      const logs = await compose(['logs', '--no-color', '--tail', '30']);
      process.stdout.write(`${tail(logs.stdout, 120)}\n`);
    }
  } finally {
    await down();
  }
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`compose: crashed: ${(err as Error).stack ?? String(err)}\n`);
    checks.push({ name: 'the compose test itself ran to the end', ok: false });
  })
  .finally(() => process.exit(summary()));
