/**
 * OpenTelemetry traces from the built apps as real processes: with the standard OTEL_* variables pointing at
 * an OTLP/HTTP receiver run by this test (JSON: OTEL_EXPORTER_OTLP_PROTOCOL=http/json), a scheduled run's
 * trace goes from the scheduler's occurrence through BullMQ's add and process spans to tickwork's run, its
 * stages and each step; an enqueue from the CLI joins its run; a dead-lettered job's move is in its trace.
 * Without the variables the apps export nothing (the receiver is not told about them).
 */
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appEntry, fixtureModule, freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';

interface Span {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, unknown>;
}

/** A minimal OTLP/HTTP receiver: every span of every POST /v1/traces (JSON), flattened. */
function otlpReceiver(): { server: Server; spans: Span[] } {
  const spans: Span[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans?: { resource?: { attributes?: Attr[] }; scopeSpans?: { spans?: RawSpan[] }[] }[];
        };
        for (const rs of body.resourceSpans ?? []) {
          const service = String(valueOf(rs.resource?.attributes, 'service.name'));
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? [])
              spans.push({ service, traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId ?? '', name: s.name, attributes: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, plain(a.value)])) });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return { server, spans };
}
interface Attr {
  key: string;
  value: Record<string, unknown>;
}
interface RawSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: Attr[];
}
const plain = (v: Record<string, unknown>) => v.stringValue ?? v.intValue ?? v.boolValue ?? v.doubleValue ?? v.arrayValue;
const valueOf = (attrs: Attr[] | undefined, key: string) => plain(attrs?.find((a) => a.key === key)?.value ?? {});

describe('OpenTelemetry traces', { timeout: 180_000 }, () => {
  let redis: RedisServerHandle;
  const receiver = otlpReceiver();
  let otel: Record<string, string>;
  let common: Record<string, string>;
  const apps: AppProcess[] = [];

  beforeAll(async () => {
    redis = await startRedisServer();
    const port = await freePort();
    await new Promise<void>((r) => receiver.server.listen(port, '127.0.0.1', r));
    otel = {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_METRICS_EXPORTER: 'none',
      OTEL_LOGS_EXPORTER: 'none',
    };
    common = { REDIS_URL: redis.url, JOBS_MODULE: fixtureModule('traced-catalog'), LOG_LEVEL: 'info' };
    for (const app of ['scheduler', 'worker'] as const) {
      const proc = startApp(appEntry(app), { ...common, ...otel, PORT: String(await freePort()) });
      apps.push(proc);
      await proc.waitForLog((l) => l.msg === `${app} ready`, `${app} ready`, 60_000);
      expect(proc.logs().some((l) => l.msg === 'OpenTelemetry traces on')).toBe(true);
    }
  });
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop('SIGKILL')));
    await new Promise((r) => receiver.server.close(r));
    await redis?.stop();
  });

  /** What the receiver has, for a failure's message: each span as service:name and its parent's name. */
  const summary = () => {
    const spans = byId();
    const lines = receiver.spans.map((s) => `${s.service}:${s.name} <- ${spans.get(s.parentSpanId)?.name ?? (s.parentSpanId ? `(missing ${s.parentSpanId})` : 'root')}`);
    // Each span the CLI's enqueues made, by id, and every span naming one of their jobs, with its trace.
    const cliSpans = receiver.spans.filter((s) => s.service === 'tickwork-cli').map((s) => `${s.name} ${s.traceId}/${s.spanId} job ${String(s.attributes['bullmq.job.key'] ?? s.attributes['bullmq.job.id'] ?? '?')}`);
    const cliTraces = new Set(receiver.spans.filter((s) => s.service === 'tickwork-cli').map((s) => s.traceId));
    const show = (s: Span) => `${s.service}:${s.name} ${s.traceId}/${s.spanId} <- ${s.parentSpanId || 'root'} job ${String(s.attributes['bullmq.job.id'] ?? s.attributes['tickwork.job.id'] ?? '?')}`;
    const inCliTraces = receiver.spans.filter((s) => s.service !== 'tickwork-cli' && cliTraces.has(s.traceId)).map(show);
    const orphans = receiver.spans.filter((s) => s.parentSpanId && !spans.has(s.parentSpanId)).map(show);
    return `${receiver.spans.length} spans; the CLI's: ${cliSpans.join(' | ')}; others in their traces: ${inCliTraces.join(' | ')}; with a missing parent: ${orphans.join(' | ')}; distinct: ${[...new Set(lines)].slice(0, 60).join(' | ')}`;
  };
  const waitSpan = (probe: () => Span | undefined, what: string) =>
    waitFor(probe, { timeoutMs: 60_000, what }).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; ${summary()}`);
    });
  const byId = () => new Map(receiver.spans.map((s) => [s.spanId, s]));
  /** The span's ancestors' names, nearest first, as far as the receiver has them. */
  const ancestry = (span: Span) => {
    const spans = byId();
    const names: string[] = [];
    for (let p = spans.get(span.parentSpanId); p; p = spans.get(p.parentSpanId)) names.push(`${p.service}:${p.name}`);
    return names;
  };

  it("joins a scheduled run's spans from the scheduler's occurrence through BullMQ's add and process to its stages and steps", async () => {
    const step = await waitSpan(
      () => receiver.spans.find((s) => s.name === 'tickwork.step' && s.attributes['tickwork.step.id'] === 'second' && ancestry(s).some((a) => a.startsWith('tickwork-scheduler:'))),
      "a scheduled run's redisStep span, joined to the scheduler's",
    );
    const chain = ancestry(step);
    // Nearest first: the stages (each holding the ones after it), the run, BullMQ's process, its addBulk, the occurrences.
    expect(chain.slice(0, 9)).toEqual([
      'tickwork-worker:tickwork.execute',
      'tickwork-worker:tickwork.schedule-gate',
      'tickwork-worker:tickwork.claim',
      'tickwork-worker:tickwork.on-time',
      'tickwork-worker:tickwork.overlap-policy',
      'tickwork-worker:tickwork.judge-late',
      'tickwork-worker:tickwork.cancel-gate',
      'tickwork-worker:tickwork.run',
      `tickwork-worker:process traced`,
    ]);
    expect(chain.slice(9)).toEqual(['tickwork-scheduler:addBulk traced', 'tickwork-scheduler:tickwork.schedule.occurrences']);
    const first = receiver.spans.filter((s) => s.traceId === step.traceId && s.name === 'tickwork.step' && s.attributes['tickwork.step.id'] === 'first');
    expect(first).toHaveLength(1);
    expect(first[0]?.attributes['tickwork.step.kind']).toBe('step');
    expect(step.attributes['tickwork.step.kind']).toBe('redis');
    const run = receiver.spans.find((s) => s.traceId === step.traceId && s.name === 'tickwork.run');
    expect(run?.attributes).toMatchObject({ 'tickwork.queue': 'traced', 'tickwork.job.name': 'traced.tick', 'tickwork.attempt': expect.anything() });
  });

  it("joins an enqueue from the CLI to its run, and a dead-lettered job's move to its trace", async () => {
    // Not spawnSync: the receiver runs in this process, and a blocked event loop would leave the worker's and
    // the scheduler's exports unanswered until their exporters gave them up (their spans lost: CI).
    const cli = (args: string[]) =>
      new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        execFile(process.execPath, [appEntry('cli'), ...args], { env: { PATH: process.env.PATH ?? '', ...common, ...otel }, encoding: 'utf8' }, (err, stdout, stderr) =>
          resolve({ status: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
        );
      });
    const work = await cli(['enqueue', 'traced.work', '{"n":7}', '--json']);
    expect(work.status, work.stderr).toBe(0);
    const workId = String((JSON.parse(work.stdout) as { id: string }).id);
    const fail = await cli(['enqueue', 'traced.fail', '{}', '--json']);
    expect(fail.status, fail.stderr).toBe(0);
    const failId = String((JSON.parse(fail.stdout) as { id: string }).id);

    const workStep = await waitSpan(
      () => receiver.spans.find((s) => s.name === 'tickwork.step' && s.attributes['tickwork.step.id'] === 'only' && ancestry(s).includes('tickwork-cli:add traced.traced.work')),
      "the CLI's enqueue joined to its run's step",
    ).catch(async (err: unknown) => {
      // What Redis holds of the job, and the worker's lines naming it: was it run, and how was it fetched.
      const admin = redis.client();
      const keys = (await admin.keys(`*:traced:${workId}`)).filter((k) => !k.includes('@'));
      const hash = keys[0] ? await admin.hgetall(keys[0]) : {};
      admin.disconnect();
      const lines = apps.flatMap((a) => a.lines.filter((l) => l.includes(`"${workId}"`) || l.includes(`:${workId}"`))).slice(0, 20);
      throw new Error(`${(err as Error).message}; the job's hash (${keys.join(', ')}): ${JSON.stringify(hash)}; the apps' lines naming it: ${lines.join(' || ')}`);
    });
    expect(receiver.spans.find((s) => s.traceId === workStep.traceId && s.name === 'tickwork.run')?.attributes['tickwork.job.id']).toBe(workId);

    const move = await waitSpan(
      () => receiver.spans.find((s) => s.name === 'tickwork.dead-letter' && s.attributes['tickwork.job.id'] === failId),
      'the dead-letter move span',
    );
    expect(ancestry(move)).toContain('tickwork-cli:add traced.traced.fail');
    const failedRun = receiver.spans.find((s) => s.traceId === move.traceId && s.name === 'tickwork.run');
    expect(failedRun?.attributes['tickwork.job.id']).toBe(failId);
  });
});
