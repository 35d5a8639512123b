/**
 * One stack of `pnpm test:compose`: `up --build` with the given compose files, then the checks every stack
 * must pass (health, CLI in a container, a job processed by a worker replica, a runtime schedule firing,
 * the dashboard's auth and data, workers draining on SIGTERM), then `down -v`.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { anyFailed, check, run, say, tail, type Engine, type Result } from './compose-engine.js';
import { waitFor } from './wait-for.js';

export interface StackSpec {
  /** Prefixes the check names (blank for the default stack). */
  label: string;
  files: string[];
  workers: number;
  /** Services that must be running and healthy, with their container counts (the worker's is `workers`). */
  healthy: Record<string, number>;
  /** One-shot services that must have exited 0. */
  completed: string[];
  /** redis-cli in the `redis` service, with what the layout needs (`-c` follows a cluster's redirects). */
  redisCli: string[];
  /** Extra checks once the stack is healthy. */
  extra?: (ctx: StackContext) => Promise<void>;
}

export interface StackContext {
  name: (check: string) => string;
  composeOk: (args: string[], timeoutMs?: number) => Promise<string>;
  docker: (args: string[]) => Promise<Result>;
  /** The stack's container ids, of one service or all; `all` includes exited ones. Plain `docker`: cheap to poll. */
  containers: (service?: string, all?: boolean) => Promise<string[]>;
  /** A container's log (stdout and stderr), with plain `docker logs`. */
  logsOf: (id: string) => Promise<string>;
}

/** email.send appends here (packages/jobs/src/demo-data.ts, DEMO_KEYS.outbox). */
const OUTBOX_KEY = 'tickwork:demo:{email}:outbox';

/** Runs the stack's checks; returns a teardown (also right for an interrupted run), idempotent. */
export function stackRunner(engine: Engine, spec: StackSpec): { test: () => Promise<void>; down: () => Promise<void> } {
  const name = (c: string) => (spec.label ? `${spec.label}: ${c}` : c);
  const project = `tickwork-ct-${spec.label || 'default'}-${Date.now().toString(36)}-${process.pid}`;
  const password = randomBytes(12).toString('hex');
  const env: NodeJS.ProcessEnv = { ...engine.env, DASHBOARD_USER: 'admin', DASHBOARD_PASSWORD: password };
  const [composeCmd = 'docker', ...composePrefix] = engine.compose;
  const fileArgs = spec.files.flatMap((f) => ['-f', f]);
  const compose = (args: string[], timeoutMs = 60_000) => run(composeCmd, [...composePrefix, ...fileArgs, '-p', project, ...args], { env, timeoutMs });
  const composeOk = async (args: string[], timeoutMs?: number) => {
    const r = await compose(args, timeoutMs);
    if (r.code !== 0) throw new Error(`compose ${args.join(' ')} exited ${r.code}:\n${tail(r.stderr || r.stdout, 15)}`);
    return r.stdout;
  };
  const docker = (args: string[]) => run('docker', args, { env: engine.env });
  const dockerOk = async (args: string[]) => {
    const r = await docker(args);
    if (r.code !== 0) throw new Error(`docker ${args.slice(0, 3).join(' ')} exited ${r.code}:\n${tail(r.stderr || r.stdout, 15)}`);
    return r.stdout;
  };
  // What the checks poll goes through plain `docker` with the compose labels, not the compose command: in the
  // sandbox each compose call is docker-compose 1.29 run twice and a python3, about 1.7 s of CPU, and polling
  // it every second starved the tests CI runs beside it. What a user would type (up, exec, stop) stays compose.
  const containers = async (service?: string, all = false) => {
    const filters = [`label=com.docker.compose.project=${project}`, ...(service ? [`label=com.docker.compose.service=${service}`] : [])];
    const out = await dockerOk(['ps', '-q', ...(all ? ['-a'] : []), ...filters.flatMap((f) => ['--filter', f])]);
    return out.split('\n').filter(Boolean);
  };
  const logsOf = async (id: string) => {
    const r = await docker(['logs', id]);
    if (r.code !== 0) throw new Error(`docker logs ${id} exited ${r.code}:\n${tail(r.stderr, 15)}`);
    return `${r.stdout}\n${r.stderr}`;
  };
  let redisId: string | undefined;
  const outboxHas = async (subject: string) => {
    redisId ??= (await containers('redis'))[0];
    if (!redisId) throw new Error('no running redis container');
    const out = await dockerOk(['exec', redisId, ...spec.redisCli, 'LRANGE', OUTBOX_KEY, '0', '-1']);
    return out.split('\n').some((line) => line.includes(subject));
  };

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

  const test = async () => {
    // Port 0: Docker picks a free host port when it binds, and `compose port` reads it back below. A port picked
    // here beforehand could be taken by another process (a test suite beside this one) before `up` binds it.
    env.DASHBOARD_HOST_PORT = '0';
    say(`project ${project} (${spec.files.join(' + ')}): building images and starting with ${spec.workers} workers`);
    const upLog = join(tmpdir(), `${project}-up.log`);
    const up = await check(name(`stack builds and starts (up -d --build --scale worker=${spec.workers})`), async () => {
      const r = await compose(['up', '-d', '--build', '--scale', `worker=${spec.workers}`], 30 * 60_000);
      if (r.code !== 0) {
        writeFileSync(upLog, `${r.stdout}\n${r.stderr}`);
        throw new Error(`exit ${r.code}; full output in ${upLog}:\n${tail(`${r.stdout}\n${r.stderr}`, 40)}`);
      }
    });
    if (!up) return;

    const expected: Record<string, number> = { ...spec.healthy, worker: spec.workers };
    const total = Object.values(expected).reduce((a, b) => a + b, 0);
    let lastStates = '';
    const healthy = await check(name(`all ${total} containers healthy${spec.completed.length ? `, ${spec.completed.join(', ')} exited 0` : ''}`), async () => {
      try {
        await waitFor(
          async () => {
            const ids = await containers(undefined, true); // the one-shot services have exited
            if (ids.length === 0) return false;
            const r = await docker([
              'inspect',
              '--format',
              '{{index .Config.Labels "com.docker.compose.service"}} {{.Name}} {{.State.Status}} {{.State.ExitCode}} {{if .State.Health}}{{.State.Health.Status}}{{end}}',
              ...ids,
            ]);
            lastStates = r.stdout.trim();
            const rows = lastStates.split('\n').map((l) => l.split(' '));
            const exited0 = (svc: string) => rows.some(([s, , status, code]) => s === svc && status === 'exited' && code === '0');
            return (
              spec.completed.every(exited0) &&
              Object.entries(expected).every(
                ([svc, n]) => rows.filter(([s, , status, , health]) => s === svc && status === 'running' && health === 'healthy').length === n,
              )
            );
          },
          // 300 s: in CI the stacks start beside the whole test suite on two cores; a Redis Cluster's six nodes,
          // its init and the apps behind it were once not all healthy within 180 s there.
          { timeoutMs: 300_000, intervalMs: 1000, what: 'every container running and healthy' },
        );
      } catch (err) {
        throw new Error(`${(err as Error).message}; last states:\n${tail(lastStates, 15)}`);
      }
      return `${spec.workers} workers`;
    });
    if (!healthy) {
      const logs = await compose(['logs', '--no-color', '--tail', '20']);
      process.stdout.write(`${tail(logs.stdout, 80)}\n`);
      return;
    }

    // The image's production install holds what the engine needs to check its contract (ioredis among
    // them): a worker there falling back to BullMQ's public paths would run slower than every figure says.
    await check(name("every worker runs on the engine's fast path (the image's BullMQ matches the contract)"), async () => {
      const ids = await containers('worker');
      for (const id of ids) {
        const logs = await logsOf(id);
        if (!logs.includes('BullMQ engine: fast path')) {
          const engineLine = logs.split('\n').find((l) => l.includes('BullMQ engine:')) ?? '(no engine line logged)';
          throw new Error(`a worker is not on the fast path: ${engineLine.slice(0, 600)}`);
        }
      }
      return `${ids.length} workers`;
    });

    await spec.extra?.({ name, composeOk, docker, containers, logsOf });

    await check(name('tickwork CLI runs in the scheduler container (tickwork jobs)'), async () => {
      const out = await composeOk(['exec', '-T', 'scheduler', 'tickwork', 'jobs', '--json']);
      if (!out.includes('"email.send"')) throw new Error(`email.send not listed:\n${tail(out, 10)}`);
    });

    const jobId = `compose-test-${randomBytes(4).toString('hex')}`;
    const subject = `compose test ${jobId}`;
    const enqueued = await check(name('tickwork enqueue email.send from a worker container'), async () => {
      const payload = JSON.stringify({ to: 'compose-test@example.com', subject, body: 'sent by pnpm test:compose' });
      const out = await composeOk(['exec', '-T', 'worker', 'tickwork', 'enqueue', 'email.send', payload, '--id', jobId, '--json']);
      const result = JSON.parse(out) as { id?: string };
      if (result.id !== jobId) throw new Error(`expected id ${jobId}, got ${out.trim()}`);
      return jobId;
    });

    if (enqueued) {
      await check(name(`the email lands in ${OUTBOX_KEY}`), async () => {
        await waitFor(() => outboxHas(subject), { timeoutMs: 60_000, intervalMs: 1000, what: `an outbox entry with subject "${subject}"` });
      });

      await check(name('a worker replica logged the job as completed'), async () =>
        waitFor(
          async () => {
            for (const id of await containers('worker')) {
              for (const line of (await logsOf(id)).split('\n')) {
                if (!line.startsWith('{')) continue;
                const entry = JSON.parse(line) as { msg?: string; jobId?: string };
                if (entry.msg === 'job completed' && entry.jobId === jobId) return `by ${(await dockerOk(['inspect', '--format', '{{.Name}}', id])).trim().replace(/^\//, '')}`;
              }
            }
            return false;
          },
          { timeoutMs: 30_000, intervalMs: 1000, what: `a "job completed" log line for ${jobId} in the worker logs` },
        ),
      );
    }

    // A runtime schedule added with the CLI, fired by the scheduler, run by a worker: its email lands too.
    const tickSubject = `compose test schedule ${randomBytes(4).toString('hex')}`;
    await check(name('a runtime schedule (every 1s, added with tickwork schedules add) fires and its job runs'), async () => {
      const data = JSON.stringify({ to: 'compose-test@example.com', subject: tickSubject, body: 'fired by the scheduler' });
      const t0 = Date.now();
      await composeOk(['exec', '-T', 'scheduler', 'tickwork', 'schedules', 'add', 'compose-test-tick', '--job', 'email.send', '--every', '1s', '--tz', 'UTC', '--data', data, '--json']);
      const added = Date.now();
      await waitFor(() => outboxHas(tickSubject), { timeoutMs: 90_000, intervalMs: 1000, what: `an outbox entry with subject "${tickSubject}"` });
      const landed = Date.now();
      await composeOk(['exec', '-T', 'scheduler', 'tickwork', 'schedules', 'rm', 'compose-test-tick', '--json']);
      return `added in ${((added - t0) / 1000).toFixed(1)} s, its email seen ${((landed - added) / 1000).toFixed(1)} s later`;
    });

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
    await check(name('dashboard /healthz answers without credentials'), () => expectStatus('/healthz', 200));
    await check(name('dashboard /readyz answers without credentials'), () => expectStatus('/readyz', 200));
    await check(name('dashboard answers 401 without credentials'), () => expectStatus('/', 401));
    await check(name('dashboard answers 401 with a wrong password'), () => expectStatus('/', 401, 'admin:wrong'));
    await check(name('dashboard answers 200 with DASHBOARD_USER/DASHBOARD_PASSWORD'), () => expectStatus('/', 200, `admin:${password}`));
    if (enqueued) {
      // Bull Board's own JSON API (what its page loads): proves the dashboard reads the same Redis.
      await check(name('dashboard lists the email queue with the completed job'), async () => {
        const res = await get('/queues/api/queues', `admin:${password}`);
        if (res.status !== 200) throw new Error(`GET /queues/api/queues answered ${res.status}`);
        const body = (await res.json()) as { queues?: { name: string; counts?: Record<string, number> }[] };
        const email = body.queues?.find((q) => q.name === 'email');
        if (!email) throw new Error(`no "email" queue among ${body.queues?.map((q) => q.name).join(', ')}`);
        if ((email.counts?.completed ?? 0) < 1) throw new Error(`email queue counts: ${JSON.stringify(email.counts)}`);
        return `completed: ${email.counts?.completed}`;
      });
    }

    await check(name('workers stop cleanly on SIGTERM within the grace period (exit 0)'), async () => {
      const ids = await containers('worker');
      await composeOk(['stop', 'worker'], 120_000);
      const codes = (await docker(['inspect', '--format', '{{.State.ExitCode}}', ...ids])).stdout.split('\n').filter(Boolean);
      if (codes.length !== spec.workers || codes.some((c) => c !== '0')) throw new Error(`worker exit codes: ${codes.join(', ')}`);
      const logs = (await Promise.all(ids.map(logsOf))).join('\n');
      const clean = logs.split('\n').filter((l) => l.includes('"stopped cleanly"')).length;
      if (clean < spec.workers) throw new Error(`${clean} of ${spec.workers} workers logged "stopped cleanly"`);
      return `${spec.workers} workers drained`;
    });

    if (anyFailed()) {
      const logs = await compose(['logs', '--no-color', '--tail', '30']);
      process.stdout.write(`${tail(logs.stdout, 120)}\n`);
    }
  };
  return { test, down };
}
