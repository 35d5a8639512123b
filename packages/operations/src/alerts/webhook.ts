import type { Logger } from '@tickwork/core';
import { safeUrl } from '@tickwork/core';
import { webhookDeliveries } from './metrics.js';

export interface WebhookOptions {
  url: string;
  log: Logger;
  /** Per attempt. Default 5 s. */
  timeoutMs?: number;
  /** Attempts after the first. Default 3. */
  retries?: number;
  /** First retry delay, doubled each retry. Default 500 ms. */
  backoffMs?: number;
  /** Deliveries in flight beyond this are dropped (and counted), so a dead endpoint cannot pile up memory. */
  maxInFlight?: number;
}

export interface WebhookResult {
  delivered: boolean;
  attempts: number;
  status?: number;
  error?: string;
}

/**
 * Posts alert JSON to a webhook in the background. `send` returns at once: job processing never waits for
 * the endpoint. The URL may carry a token (Slack-style paths, ?token=), so only safeUrl(url) is logged,
 * and error messages are reduced to their code.
 */
export class WebhookSender {
  private readonly inFlight = new Set<Promise<WebhookResult>>();
  private readonly target: string;
  private readonly endpoint: string;
  private readonly authorization: string | undefined;

  constructor(private readonly opts: WebhookOptions) {
    this.target = redactPath(opts.url);
    // fetch refuses URLs with credentials; `https://user:pass@host/...` becomes a Basic auth header.
    const u = new URL(opts.url);
    this.authorization = u.username || u.password
      ? `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`
      : undefined;
    u.username = '';
    u.password = '';
    this.endpoint = u.toString();
  }

  send(body: unknown): void {
    if (this.inFlight.size >= (this.opts.maxInFlight ?? 100)) {
      webhookDeliveries.inc({ outcome: 'dropped' });
      this.opts.log.warn({ webhook: this.target, inFlight: this.inFlight.size }, 'alert webhook backlog full; alert dropped (it is still in the log)');
      return;
    }
    const p = this.deliver(body).finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  /** Delivers with timeout and retries; resolves (never rejects) with the outcome. */
  async deliver(body: unknown): Promise<WebhookResult> {
    const retries = this.opts.retries ?? 3;
    const payload = JSON.stringify(body);
    let last: WebhookResult = { delivered: false, attempts: 0 };
    for (let attempt = 1; attempt <= retries + 1; attempt++) {
      last = await this.attempt(payload, attempt);
      if (last.delivered) break;
      const retryable = last.status === undefined || last.status >= 500 || last.status === 429;
      if (!retryable || attempt > retries) break;
      await new Promise((r) => setTimeout(r, (this.opts.backoffMs ?? 500) * 2 ** (attempt - 1)));
    }
    webhookDeliveries.inc({ outcome: last.delivered ? 'delivered' : 'failed' });
    if (last.delivered) this.opts.log.debug({ webhook: this.target, attempts: last.attempts }, 'alert webhook delivered');
    else this.opts.log.warn({ webhook: this.target, attempts: last.attempts, status: last.status, error: last.error }, 'alert webhook delivery failed');
    return last;
  }

  /** Waits for deliveries in flight, at most `timeoutMs` (used on shutdown and by tests). */
  async settle(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((r) => {
      timer = setTimeout(r, timeoutMs);
    });
    await Promise.race([Promise.allSettled([...this.inFlight]), deadline]);
    clearTimeout(timer);
  }

  private async attempt(payload: string, attempt: number): Promise<WebhookResult> {
    try {
      const res = await fetch(this.endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'tickwork-alerts',
          ...(this.authorization && { authorization: this.authorization }),
        },
        body: payload,
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? 5000),
      });
      await res.arrayBuffer().catch(() => undefined);
      return { delivered: res.ok, attempts: attempt, status: res.status };
    } catch (err) {
      return { delivered: false, attempts: attempt, error: describeFetchError(err) };
    }
  }
}

/** Only a code or error name: undici's messages and causes can include the request URL. */
function describeFetchError(err: unknown): string {
  if (!(err instanceof Error)) return 'unknown error';
  if (err.name === 'TimeoutError' || err.name === 'AbortError') return 'timeout';
  const cause = (err as { cause?: { code?: unknown } }).cause;
  return typeof cause?.code === 'string' ? cause.code : err.name;
}

/** safeUrl hides credentials and the query; webhook paths are often tokens too (Slack, Discord), so hide the path. */
function redactPath(url: string): string {
  const safe = safeUrl(url);
  try {
    const u = new URL(safe);
    return u.pathname && u.pathname !== '/' ? `${u.origin}/***${u.search}` : safe;
  } catch {
    return safe;
  }
}
