// Prometheus exposition for GET /metrics: who may read it, and its own listener (METRICS_PORT). The registry and
// the metric helpers inner layers use are in src/infra/metrics.ts.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server as NodeServer, type ServerResponse } from 'node:http';
import type { Logger } from '../infra/log.js';
import { errorMessage } from '../errors.js';

export type MetricsHandler = () => Promise<{ contentType: string; body: string }>;

/**
 * True when the Authorization header is "Bearer <token>". Both sides are hashed first, so the comparison takes
 * the same time whatever the header's length or how much of it matches.
 */
export function bearerMatches(header: unknown, token: string): boolean {
  if (token === '' || typeof header !== 'string' || !/^Bearer /i.test(header)) return false;
  const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
  return timingSafeEqual(digest(header.slice('Bearer '.length).trim()), digest(token));
}

/** GET /metrics on its own listener (METRICS_PORT): nothing else is served there. */
export function createMetricsServer(handler: MetricsHandler, token: string, log: Logger): NodeServer {
  const send = (res: ServerResponse, status: number, headers: Record<string, string>, body: string) => {
    res.writeHead(status, headers);
    res.end(body);
  };
  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      send(res, 404, { 'content-type': 'application/json' }, JSON.stringify({ error: 'Not found' }));
      return;
    }
    if (token !== '' && !bearerMatches(req.headers.authorization, token)) {
      send(res, 401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }, JSON.stringify({ error: 'Unauthorized' }));
      return;
    }
    handler().then(
      (out) => send(res, 200, { 'content-type': out.contentType }, out.body),
      (err: unknown) => {
        log.error({ err: errorMessage(err) }, 'metrics could not be collected');
        send(res, 500, { 'content-type': 'application/json' }, JSON.stringify({ error: 'Internal error' }));
      },
    );
  });
}
