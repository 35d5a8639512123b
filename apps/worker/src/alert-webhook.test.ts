import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { WebhookSender } from '@tickwork/operations';
import { freePort } from '@tickwork/testkit';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { captureLogger } from './testing/capture-logger.js';

vi.setConfig({ testTimeout: 20_000 });

const servers: Server[] = [];

async function serve(handler: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<string> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => handler(req, res, body));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/services/T000/B000/SECRET-TOKEN?key=ALSO-SECRET`;
}

afterEach(() => {
  for (const s of servers.splice(0)) s.closeAllConnections(), s.close();
});

function expectNoSecrets(lines: string[]) {
  const all = lines.join('\n');
  expect(all).not.toContain('SECRET-TOKEN');
  expect(all).not.toContain('ALSO-SECRET');
}

describe('alert webhook', () => {
  it('POSTs the alert as JSON', async () => {
    const got: { method?: string; type?: string; body: string }[] = [];
    const url = await serve((req, res, body) => {
      got.push({ method: req.method, type: req.headers['content-type'], body });
      res.writeHead(204).end();
    });
    const { log, lines } = captureLogger();
    const result = await new WebhookSender({ url, log }).deliver({ type: 'dead_letter', job: 'x' });
    expect(result).toMatchObject({ delivered: true, attempts: 1, status: 204 });
    expect(got).toEqual([{ method: 'POST', type: 'application/json', body: '{"type":"dead_letter","job":"x"}' }]);
    expectNoSecrets(lines);
  });

  it('credentials in the URL are sent as a Basic authorization header', async () => {
    const auth: (string | undefined)[] = [];
    const base = await serve((req, res) => {
      auth.push(req.headers.authorization);
      res.writeHead(200).end();
    });
    const url = base.replace('http://', 'http://alerts:p%40ss@');
    const { log, lines } = captureLogger();
    expect(await new WebhookSender({ url, log }).deliver({})).toMatchObject({ delivered: true });
    expect(auth).toEqual([`Basic ${Buffer.from('alerts:p@ss').toString('base64')}`]);
    expect(lines.join('\n')).not.toContain('p%40ss');
  });

  it('retries a 5xx with backoff and succeeds', async () => {
    let calls = 0;
    const url = await serve((_req, res) => res.writeHead(++calls < 3 ? 503 : 200).end());
    const { log } = captureLogger();
    const result = await new WebhookSender({ url, log, backoffMs: 20 }).deliver({ type: 'dead_letter' });
    expect(result).toMatchObject({ delivered: true, attempts: 3 });
  });

  it('does not retry a 4xx (the request itself is wrong)', async () => {
    let calls = 0;
    const url = await serve((_req, res) => res.writeHead((calls++, 404)).end());
    const { log, entries } = captureLogger();
    const result = await new WebhookSender({ url, log, backoffMs: 20 }).deliver({});
    expect(result).toMatchObject({ delivered: false, attempts: 1, status: 404 });
    expect(calls).toBe(1);
    expect(entries().find((e) => e.msg === 'alert webhook delivery failed')).toMatchObject({ status: 404 });
  });

  it('a server that is down: retries, gives up, logs the code without the URL secrets', async () => {
    const port = await freePort();
    const url = `http://user:hunter2@127.0.0.1:${port}/hook/SECRET-TOKEN?key=ALSO-SECRET`;
    const { log, lines, entries } = captureLogger();
    const result = await new WebhookSender({ url, log, retries: 2, backoffMs: 20 }).deliver({});
    expect(result).toMatchObject({ delivered: false, attempts: 3, error: 'ECONNREFUSED' });
    const failure = entries().find((e) => e.msg === 'alert webhook delivery failed');
    expect(failure?.webhook).toBe(`http://127.0.0.1:${port}/***?***`);
    expectNoSecrets(lines);
    expect(lines.join('\n')).not.toContain('hunter2');
  });

  it('a slow server: each attempt times out; send() returns at once and never blocks the caller', async () => {
    let calls = 0;
    const url = await serve((_req, res) => {
      calls++;
      setTimeout(() => res.writeHead(200).end(), 3000).unref();
    });
    const { log, entries } = captureLogger();
    const sender = new WebhookSender({ url, log, timeoutMs: 150, retries: 1, backoffMs: 20 });
    // send() is synchronous (returns nothing to await): the caller is never held by the slow server.
    expect(sender.send({ type: 'dead_letter' })).toBeUndefined();
    expect(calls).toBe(0);
    await sender.settle(5000);
    expect(calls).toBe(2);
    expect(entries().find((e) => e.msg === 'alert webhook delivery failed')).toMatchObject({ error: 'timeout', attempts: 2 });
  });

  it('drops deliveries beyond the in-flight bound instead of piling them up', async () => {
    const url = await serve((_req, res) => setTimeout(() => res.writeHead(200).end(), 300).unref());
    const { log, entries } = captureLogger();
    const sender = new WebhookSender({ url, log, maxInFlight: 2 });
    for (let i = 0; i < 4; i++) sender.send({ i });
    await sender.settle(5000);
    expect(entries().filter((e) => String(e.msg).startsWith('alert webhook backlog full'))).toHaveLength(2);
  });
});
