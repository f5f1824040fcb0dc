// restify server and routes: /api/messages, /healthz and /readyz (GET and HEAD), /metrics (with METRICS_TOKEN), the tab page /tab; everything else is 404.
import restify, { type Next, type Request, type Response, type Server } from 'restify';
import type { Logger } from '../infra/log.js';
import type { Clock } from '../infra/clock.js';
import type { BillbridgeAdapter } from '../teams/adapter.js';
import { errorMessage } from '../errors.js';
import { serveMetrics, type MetricsHandler } from './metrics.js';
import { senderBudget } from './senderBudget.js';
import { tabPageRoutes } from './tabPage.js';
import { bearerJwt } from '../tab/sso.js';

export const MESSAGE_BODY_LIMIT = 256 * 1024;

/** JSON reviver that drops prototype-polluting keys before anything sees them. */
export function safeReviver(key: string, value: unknown): unknown {
  return key === '__proto__' || key === 'constructor' || key === 'prototype' ? undefined : value;
}

export interface HttpServerDeps {
  log: Logger;
  /** The app's clock (the unauthenticated senders' byte budget runs on it). */
  clock: Clock;
  /** The Teams edge: runs one POSTed activity and answers the request itself, and says whether its token verified. */
  messages: ReturnType<BillbridgeAdapter['messagesFor']>;
  /** /readyz: each part the bot needs and whether it is ready now. */
  readiness: () => Record<string, boolean>;
  metrics: MetricsHandler;
  /** METRICS_TOKEN: /metrics is served on this port only when set, and only to a request bearing it. */
  metricsToken: string;
  /** An app id is configured: /api/messages refuses a request without a JWT-shaped bearer token before reading its body. */
  requireBearer: boolean;
  /** More routes (webhooks...), added by the composition root. */
  routes: Array<(server: Server) => void>;
}

export function sendJson(res: Response, status: number, body: unknown, close = false): void {
  if (close) res.setHeader('Connection', 'close');
  res.status(status);
  res.json(body);
}

export function isJsonContentType(req: Request): boolean {
  const [mediaType = ''] = (req.headers['content-type'] ?? '').split(';');
  const type = mediaType.trim().toLowerCase();
  return type === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(type);
}

export function createHttpServer(deps: HttpServerDeps): Server {
  const { log, messages } = deps;
  const server = restify.createServer({ name: 'billbridge', handleUncaughtExceptions: false, ignoreTrailingSlash: true });
  // restify re-emits the listener's 'error' events, where one nobody listens to ends the process: a port taken at
  // start-up (listen() rejects too), or an accept failing later (EMFILE under a flood), after which it goes on.
  server.on('error', (err: NodeJS.ErrnoException) => log.error({ code: err.code, err: errorMessage(err) }, 'http listener error'));

  // restify answers its own errors (bad JSON 400, too large 413, unknown route 404, wrong method 405);
  // this keeps their bodies short and logs them without the request body.
  server.on('restifyError', (req: Request, res: Response, err: Error & { statusCode?: number }, cb: () => void) => {
    const status = err.statusCode ?? 500;
    if (status >= 500) log.error({ path: req.path(), status, err: errorMessage(err) }, 'http error');
    else log.info({ path: req.path(), method: req.method, status }, 'request refused');
    (err as Error & { toJSON?: () => unknown }).toJSON = () => ({ error: status >= 500 ? 'Internal error' : err.message.slice(0, 200) });
    return cb();
  });

  const messageBody = restify.plugins.bodyParser({ maxBodySize: MESSAGE_BODY_LIMIT, mapParams: false, reviver: safeReviver });

  // Bytes senders whose tokens fail may make the bot read and parse (the token is checked against the parsed
  // activity, so a well-formed forged token costs a body parse); see senderBudget.ts.
  const unauthenticated = senderBudget(deps.clock);

  // Runs before the body is read: without a token there is nothing to authenticate, so nothing to parse either.
  const bearerFirst = (req: Request, res: Response, next: (err?: false) => void): void => {
    if (!deps.requireBearer) return next();
    // The body is left unread on a refusal here: close the connection after answering.
    const refuse = (status: number, body: unknown) => {
      sendJson(res, status, body, true);
      next(false);
    };
    if (!bearerJwt(req.headers.authorization)) {
      log.info(
        { reason: 'no bearer token', hasAuthorization: req.headers.authorization !== undefined },
        'request refused: Bot Framework authentication failed',
      );
      return refuse(401, { error: 'Unauthorized' });
    }
    const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
    const reservation = unauthenticated.reserve(req.socket.remoteAddress, declared, MESSAGE_BODY_LIMIT);
    if ('retryAfterS' in reservation) {
      log.info({ retryAfterS: reservation.retryAfterS }, 'request refused: too many unauthenticated bytes from this sender or in total');
      res.setHeader('Retry-After', String(reservation.retryAfterS));
      return refuse(429, { error: 'Too many requests' });
    }
    // Settled by what the request came to: an authenticated one gets its bytes back; one refused (token, envelope,
    // body) pays; one we could not check (OpenID metadata unavailable) is let off.
    res.once('close', () => {
      if (messages.authenticated(req)) unauthenticated.verifiedSender(reservation);
      else if (res.statusCode === 503) unauthenticated.release(reservation);
    });
    next();
  };

  // The adapter checks the activity itself (its envelope, then its token) and answers what it refuses.
  server.post('/api/messages', bearerFirst, messageBody, async (req: Request, res: Response) => {
    if (isJsonContentType(req)) await messages.process(req, res);
    else sendJson(res, 415, { error: 'Content-Type must be application/json' });
  });

  const healthz = (_req: Request, res: Response, next: Next) => {
    const listening = server.server.listening;
    sendJson(res, listening ? 200 : 503, { status: listening ? 'ok' : 'starting' });
    next();
  };

  const readyz = (_req: Request, res: Response, next: Next) => {
    const parts = deps.readiness();
    const notReady = Object.keys(parts).filter((name) => !parts[name]);
    if (notReady.length === 0) sendJson(res, 200, { status: 'ready', parts });
    else sendJson(res, 503, { status: 'not ready', notReady, parts });
    next();
  };

  // Load balancers and uptime probes often ask with HEAD: the same answer, whose body Node leaves out.
  for (const [path, probe] of Object.entries({ '/healthz': healthz, '/readyz': readyz })) {
    server.get(path, probe);
    server.head(path, probe);
  }

  // Without a token the route does not exist here (404): metrics are then only on METRICS_PORT, if anywhere.
  if (deps.metricsToken)
    server.get('/metrics', async (req: Request, res: Response) => serveMetrics(req, res, deps.metrics, deps.metricsToken, log));

  tabPageRoutes(server);
  for (const add of deps.routes) add(server);
  return server;
}
