import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { createSchedules } from '@tickwork/schedules';
import { dlqName, LIVE_BODY, readiness, redisPingCheck, type Catalog, type Logger, type QueueSet, type RedisClient } from '@tickwork/core';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { auditActions } from './audit.js';
import { createLogin, signedIn, type AuthOptions } from './basic-auth.js';
import { createCsrf, sameOriginOnly, viewersReadOnly } from './csrf.js';
import { originQueues } from './data/dead-letters.js';
import { capacityRouter } from './routes/capacity.js';
import { auditRouter } from './routes/audit.js';
import { deadLettersRouter } from './routes/dead-letters.js';
import { findRouter } from './routes/find.js';
import { processesRouter } from './routes/processes.js';
import { overviewRouter } from './routes/overview.js';
import { jobsRouter } from './routes/jobs.js';
import type { LoginThrottleOptions } from './login-throttle.js';
import { scheduleActionsRouter } from './routes/schedule-actions.js';
import { schedulesRouter } from './routes/schedules.js';
import { quietExpress, securityHeaders } from './security-headers.js';
import type { DashboardUser } from './users.js';

export interface DashboardDeps {
  catalog: Catalog;
  queues: QueueSet;
  redis: RedisClient;
  log: Logger;
  /** Who may log in, with their roles (env.ts: dashboardUsers). */
  users: readonly DashboardUser[];
  /** Login throttling; the defaults suit production, tests shorten the window. */
  loginThrottle?: LoginThrottleOptions;
  auth?: AuthOptions;
  /** DASHBOARD_TRUSTED_PROXIES: peers whose X-Forwarded-For names the client (express's `trust proxy`). */
  trustedProxies?: readonly string[];
}

/** Origin queues (catalog and any seen before) and their dead-letter queues, sorted for a stable board. */
export async function boardQueueNames(deps: Pick<DashboardDeps, 'catalog' | 'queues' | 'redis'>): Promise<string[]> {
  return (await originQueues(deps)).flatMap((q) => [q, dlqName(q)]);
}

/**
 * Bull Board renders job data (payloads, errors) and has buttons that retry and delete jobs, so its pages
 * get a Content-Security-Policy too: scripts, data and fonts only from the dashboard itself. That also keeps
 * the operator's browser from calling third parties: Bull Board's page links a Google Fonts stylesheet,
 * which the policy refuses (its own CSS falls back to system fonts).
 */
const BOARD_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; " +
  "connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'";

function boardSecurityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.set('Content-Security-Policy', BOARD_CSP);
  next();
}

/**
 * `GET /healthz` and `GET /readyz` are the only open routes; Bull Board (which can retry and delete jobs) and every other
 * path sit behind HTTP Basic auth.
 */
export async function createDashboardApp(deps: DashboardDeps): Promise<Express> {
  const app = quietExpress(express());

  // Liveness (the process serves HTTP) and readiness (Redis answers), as every app answers them.
  app.get('/healthz', (_req, res) => void res.type('json').send(LIVE_BODY));
  app.get('/readyz', async (_req, res) => {
    const { status, body } = await readiness(redisPingCheck(deps.redis));
    res.status(status).type('json').send(body);
  });

  // Without it express ignores X-Forwarded-For, so a client cannot pick the address its logins count against.
  if (deps.trustedProxies?.length) app.set('trust proxy', [...deps.trustedProxies]);
  // The headers go on the login's own answers (401, 429) too.
  app.use(securityHeaders, await createLogin({ users: deps.users, log: deps.log, throttle: deps.loginThrottle, auth: deps.auth }));
  // Recorded before the checks that may refuse an action, so refusals are in the audit log too.
  app.use(auditActions({ redis: deps.redis, prefix: deps.queues.prefix, log: deps.log }), sameOriginOnly, viewersReadOnly);

  // Two boards on one path: admins get the full one, viewers the read-only one (no buttons; its API
  // refuses changes, and viewersReadOnly above has already answered 403 to any of them).
  const queueNames = await boardQueueNames(deps);
  const adminBoard = bullBoard(deps, queueNames, false);
  const viewerBoard = bullBoard(deps, queueNames, true);
  app.use('/queues', boardSecurityHeaders, (req, res, next) => (signedIn(res).role === 'admin' ? adminBoard : viewerBoard)(req, res, next));
  // One token for every form of this process: dead-letter, schedule and job buttons alike.
  const csrf = createCsrf();
  const api = createSchedules({ redis: deps.redis, queues: deps.queues, catalog: deps.catalog, log: deps.log });
  app.use(schedulesRouter({ catalog: deps.catalog, redis: deps.redis, prefix: deps.queues.prefix, api }, csrf));
  app.use(scheduleActionsRouter({ api, catalog: deps.catalog, log: deps.log }, csrf));
  app.use(deadLettersRouter(deps, csrf));
  app.use(jobsRouter(deps, csrf));
  app.use(auditRouter({ redis: deps.redis, prefix: deps.queues.prefix }));
  app.use(capacityRouter({ catalog: deps.catalog, redis: deps.redis, prefix: deps.queues.prefix }));
  app.use(processesRouter({ redis: deps.redis, prefix: deps.queues.prefix }));
  app.use(overviewRouter({ catalog: deps.catalog, queues: deps.queues, redis: deps.redis }));
  app.use(findRouter({ catalog: deps.catalog, queues: deps.queues, redis: deps.redis, api }));
  app.get('/', (_req, res) => res.redirect('/schedules'));

  app.use((_req, res) => res.status(404).json({ error: 'not found' }));
  // Express's default handler would send the stack trace to the browser outside production.
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    // A client's mistake the body parser caught (a body over its limit: 413, malformed: 400) is answered
    // as such, not logged as the dashboard's failure.
    const status = clientErrorStatus(err);
    if (status !== undefined) return void res.status(status).type('text/plain').send(`${(err as Error).message}\n`);
    deps.log.error({ err, path: req.path }, 'dashboard request failed');
    res.status(500).type('text/plain').send('internal error; the dashboard log has the details');
  });
  return app;
}

const BOARD_TIME: Intl.DateTimeFormatOptions = {
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hourCycle: 'h23',
  timeZone: 'UTC',
  timeZoneName: 'short',
};

/** A Bull Board for the queues, as an express router; read-only for viewers. */
function bullBoard(deps: Pick<DashboardDeps, 'queues'>, names: readonly string[], readOnlyMode: boolean): Express {
  const serverAdapter = new ExpressAdapter().setBasePath('/queues');
  createBullBoard({
    queues: names.map(
      // Dead letters are re-driven with `tickwork dlq redrive`, which keeps their idempotency key; a
      // plain Bull Board retry would not, so it is turned off on DLQs.
      (name) => new BullMQAdapter(deps.queues.get(name), { readOnlyMode, ...(name.endsWith('.dlq') && { allowRetries: false, description: 'dead letters' }) }),
    ),
    serverAdapter,
    options: {
      uiConfig: {
        boardTitle: readOnlyMode ? 'tickwork (read only)' : 'tickwork',
        // Times as tickwork's pages write them: UTC on a 24-hour clock, labelled (pages/layout.ts `time`).
        dateFormats: { short: BOARD_TIME, common: BOARD_TIME, full: BOARD_TIME },
        miscLinks: [
          { text: 'Overview', url: '/overview' },
          { text: 'Schedules', url: '/schedules' },
          { text: 'Dead letters', url: '/dead-letters' },
          { text: 'Running', url: '/jobs' },
          { text: 'Audit', url: '/audit' },
          { text: 'Capacity', url: '/capacity' },
          { text: 'Processes', url: '/processes' },
          { text: 'Find a job (tickwork)', url: '/find' },
        ],
      },
    },
  });
  return quietExpress(serverAdapter.getRouter() as Express);
}

/** The 4xx status of an http-errors error (what body-parser throws), if it is one. */
function clientErrorStatus(err: unknown): number | undefined {
  const status = typeof err === 'object' && err !== null ? (err as { status?: unknown }).status : undefined;
  return typeof status === 'number' && status >= 400 && status < 500 ? status : undefined;
}
