// Prometheus exposition for GET /metrics: who may read it, and its own listener (METRICS_PORT). The registry and
// the metric helpers inner layers use are in src/infra/metrics.ts.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as NodeServer, type ServerResponse } from 'node:http';
import type { Logger } from '../infra/log.js';
import { errorMessage } from '../errors.js';

export type MetricsHandler = () => Promise<{ contentType: string; body: string }>;

/** Authorization is "Bearer <token>": both sides are hashed first, so the comparison takes the same time however much matches. */
function bearerMatches(header: unknown, token: string): boolean {
  if (token === '' || typeof header !== 'string' || !/^Bearer /i.test(header)) return false;
  const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
  return timingSafeEqual(digest(header.slice('Bearer '.length).trim()), digest(token));
}

/** Answers GET /metrics: 401 without the token (when one is set), else the exposition; on this server and on METRICS_PORT. */
export async function serveMetrics(req: IncomingMessage, res: ServerResponse, handler: MetricsHandler, token: string, log: Logger) {
  const send = (status: number, headers: Record<string, string>, body: string) => {
    res.writeHead(status, headers);
    res.end(body);
  };
  if (token !== '' && !bearerMatches(req.headers.authorization, token)) {
    send(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }, JSON.stringify({ error: 'Unauthorized' }));
    return;
  }
  try {
    const out = await handler();
    send(200, { 'content-type': out.contentType }, out.body);
  } catch (err) {
    log.error({ err: errorMessage(err) }, 'metrics could not be collected');
    send(500, { 'content-type': 'application/json' }, JSON.stringify({ error: 'Internal error' }));
  }
}

/** GET /metrics on its own listener (METRICS_PORT): nothing else is served there. */
export function createMetricsServer(handler: MetricsHandler, token: string, log: Logger): NodeServer {
  const server = createServer((req, res) => {
    if (req.method === 'GET' && (req.url ?? '/').split('?')[0] === '/metrics') return void serveMetrics(req, res, handler, token, log);
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'Not found' }));
  });
  // An 'error' event nobody listens to ends the process: an accept failing (EMFILE) is logged and the listener goes on.
  server.on('error', (err: NodeJS.ErrnoException) => log.error({ code: err.code, err: errorMessage(err) }, 'metrics listener error'));
  return server;
}
