// The sandbox's HTTP engine: routes under /connect (AP/AR and S&E), /connect-events (webhook management) and
// /__sandbox (control), BILL's checks before each call, injectable faults, latency, and BILL-shaped error arrays.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import type { Clock } from '../infra/clock.js';
import { bdc, SandboxError, type Gate, type SandboxSession, type SandboxStats } from './gate.js';
import type { SandboxModel, SandboxOrg } from './model.js';
import { MutationError } from './mutations.js';
import { QueryError } from './query.js';
import type { WebhookDispatcher } from './webhooks.js';

export type Area = 'connect' | 'events' | 'control';
type Auth = 'none' | 'login' | 'session' | 'spend';

export interface RouteContext {
  req: IncomingMessage;
  method: string;
  /** Path inside the area, e.g. /v3/bills/00n01... */
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
  /** The session's org (session routes), the token's org (spend routes), or the default org (control routes). */
  org: SandboxOrg;
  session?: SandboxSession;
  model: SandboxModel;
  gate: Gate;
  clock: Clock;
  webhooks: WebhookDispatcher;
  sandbox: SandboxControl;
}

/** The path parameter `name`: a route asks only for those its path declares, so a miss is a routing bug. */
export function param(ctx: RouteContext, name: string): string {
  const value = ctx.params[name];
  if (value === undefined) throw new Error(`route ${ctx.path} has no :${name} parameter`);
  return value;
}

/** The signed-in session of a session route. */
export function sessionOf(ctx: RouteContext): SandboxSession {
  if (!ctx.session) throw new Error(`route ${ctx.path} ran without a session`);
  return ctx.session;
}

export interface Answer {
  status?: number;
  /** undefined -> empty body. */
  body?: unknown;
  headers?: Record<string, string>;
}

/** One endpoint; other issues add theirs through `SandboxOptions.routes`. */
export interface SandboxRoute {
  area: Area;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** e.g. /v3/bills/:id */
  path: string;
  auth: Auth;
  handle(ctx: RouteContext): Answer | Promise<Answer>;
}

export type FaultKind =
  /** 500 with a SERVER error entry and no code. */
  | 'serverError'
  /** 502 with an HTML body. */
  | 'nonJson'
  /** 503 with an empty body. */
  | 'emptyError'
  /** 400 with an entry that has no code. */
  | 'noCodeError'
  /** The connection is dropped without an answer. */
  | 'reset'
  /** A list page with no rows that still carries the same cursor (only for requests that send a cursor). */
  | 'emptyPage';

export interface Fault {
  kind: FaultKind;
  method?: string;
  /** Matches when the area path starts with this, e.g. /v3/bills. */
  path?: string;
  /** How many matching requests get it (default 1). */
  count?: number;
}

/** What control routes may do to the running sandbox. */
export interface SandboxControl {
  stats(): SandboxStats;
  resetStats(): void;
  addFault(f: Fault): void;
  clearFaults(): void;
  /** Milliseconds added to every BILL call from now on. */
  setLatency(ms: number): void;
  defaultOrg(): SandboxOrg;
}

/** One BILL call as the sandbox received it (control calls are not logged): what a test checks filters against. */
export interface SandboxRequest {
  at: number;
  /** Route label, e.g. "GET /v3/vendors". */
  route: string;
  /** The raw `filters`, `sort`, `max` and cursor query values, when sent. */
  filters?: string;
  sort?: string;
  max?: string;
  page?: string;
  /** HTTP status answered (0 when the connection was dropped). */
  status: number;
}

/** Requests kept in the log; older ones are dropped first. */
const REQUEST_LOG_LIMIT = 20_000;

interface CompiledRoute extends SandboxRoute {
  regex: RegExp;
  keys: string[];
  label: string;
}

const AREA_PREFIX: Record<Area, string> = { connect: '/connect', events: '/connect-events', control: '/__sandbox' };

function compile(route: SandboxRoute): CompiledRoute {
  const keys: string[] = [];
  const pattern = route.path.replace(/:([A-Za-z]+)/g, (_m, k: string) => {
    keys.push(k);
    return '([^/]+)';
  });
  const shown = route.path.replace(/:([A-Za-z]+)/g, '{$1}');
  const label = route.area === 'connect' ? `${route.method} ${shown}` : `${route.method} ${AREA_PREFIX[route.area]}${shown}`;
  return { ...route, regex: new RegExp(`^${pattern}$`), keys, label };
}

export interface EngineDeps {
  model: SandboxModel;
  gate: Gate;
  clock: Clock;
  webhooks: WebhookDispatcher;
  stats: SandboxStats;
  routes: SandboxRoute[];
  latencyMs: number;
  control: Omit<SandboxControl, 'addFault' | 'clearFaults' | 'setLatency'>;
}

const MAX_BODY = 1024 * 1024;

export class SandboxEngine {
  private readonly routes: CompiledRoute[];
  private faults: Array<Fault & { remaining: number }> = [];
  private latencyMs: number;
  readonly control: SandboxControl;
  /** The last REQUEST_LOG_LIMIT BILL calls, oldest first. */
  readonly requestLog: SandboxRequest[] = [];

  constructor(private readonly deps: EngineDeps) {
    this.routes = deps.routes.map(compile);
    this.latencyMs = deps.latencyMs;
    this.control = {
      ...deps.control,
      addFault: (f) => this.faults.push({ ...f, remaining: f.count ?? 1 }),
      clearFaults: () => {
        this.faults = [];
      },
      setLatency: (ms) => {
        this.latencyMs = Math.max(0, ms);
      },
    };
  }

  createServer(): Server {
    return createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) this.writeError(res, bdc(this.deps.clock, 500, undefined, 'Internal sandbox error', 'SERVER'));
        else res.destroy(err instanceof Error ? err : undefined);
      });
    });
  }

  private takeFault(area: Area, method: string, path: string, hasCursor: boolean): Fault | undefined {
    if (area === 'control') return undefined;
    const f = this.faults.find(
      (x) =>
        x.remaining > 0 &&
        (!x.method || x.method === method) &&
        (!x.path || path.startsWith(x.path)) &&
        (x.kind !== 'emptyPage' || hasCursor),
    );
    if (!f) return undefined;
    f.remaining--;
    this.faults = this.faults.filter((x) => x.remaining > 0);
    return f;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sandbox.local');
    const method = (req.method ?? 'GET').toUpperCase();
    const area: Area | undefined = url.pathname.startsWith('/connect-events/')
      ? 'events'
      : url.pathname.startsWith('/connect/')
        ? 'connect'
        : url.pathname.startsWith('/__sandbox/')
          ? 'control'
          : undefined;
    const stats = this.deps.stats;
    if (!area) {
      await this.drain(req);
      this.writeError(res, bdc(this.deps.clock, 404, 'BDC_1121', 'API not supported.'));
      return;
    }
    const path = url.pathname.slice(AREA_PREFIX[area].length);
    let route: CompiledRoute | undefined;
    let match: RegExpExecArray | null = null;
    for (const r of this.routes) {
      if (r.area !== area || r.method !== method) continue;
      match = r.regex.exec(path);
      if (match) {
        route = r;
        break;
      }
    }
    if (area !== 'control') {
      stats.requests++;
      const label = route?.label ?? `${method} (unmatched)`;
      stats.requestsByPath[label] = (stats.requestsByPath[label] ?? 0) + 1;
      const q = url.searchParams;
      const logged: SandboxRequest = { at: this.deps.clock.now(), route: label, status: 0 };
      for (const k of ['filters', 'sort', 'max', 'page'] as const) {
        const v = q.get(k) ?? (k === 'page' ? q.get('nextPage') : null);
        if (v !== null) logged[k] = v;
      }
      if (this.requestLog.length >= REQUEST_LOG_LIMIT) this.requestLog.splice(0, this.requestLog.length - REQUEST_LOG_LIMIT + 1);
      this.requestLog.push(logged);
      res.once('finish', () => {
        logged.status = res.statusCode;
      });
    }
    let release: (() => void) | undefined;
    try {
      const body = await this.readBody(req);
      if (!route || !match) throw bdc(this.deps.clock, 404, 'BDC_1121', 'API not supported.');
      const params: Record<string, string> = {};
      route.keys.forEach((k, i) => {
        params[k] = decodeURIComponent(match[i + 1] ?? '');
      });
      const fault = this.takeFault(area, method, path, url.searchParams.has('page') || url.searchParams.has('nextPage'));
      if (fault?.kind === 'reset') {
        req.socket.destroy();
        return;
      }
      const header = (name: string) => {
        const v = req.headers[name.toLowerCase()];
        return Array.isArray(v) ? v[0] : v;
      };
      let org: SandboxOrg | undefined;
      let session: SandboxSession | undefined;
      const gate: Gate = this.deps.gate;
      const { model } = this.deps;
      if (route.auth === 'login') {
        gate.checkLoginFields(body);
        const b = body as Record<string, unknown>;
        const devKey = b.devKey as string;
        gate.checkDevKey(devKey);
        gate.countHourly(devKey);
        release = gate.enter(devKey, typeof b.organizationId === 'string' ? b.organizationId : '');
      } else if (route.auth === 'session') {
        const devKey = header('devKey');
        gate.checkDevKey(devKey);
        session = gate.authenticate(devKey, header('sessionId'));
        gate.countHourly(devKey);
        release = gate.enter(devKey, session.orgId);
        org = model.org(session.orgId);
      } else if (route.auth === 'spend') {
        const token = header('apiToken');
        org = token ? model.orgForSpendToken(token) : undefined;
        if (!org || !token)
          throw new SandboxError(401, [
            {
              timestamp: new Date(this.deps.clock.now()).toISOString(),
              severity: 'ERROR',
              category: 'REQUEST',
              message: 'Invalid API token',
            },
          ]);
        const wait = gate.spendOverLimit(token);
        if (wait !== undefined) {
          throw new SandboxError(
            429,
            [
              {
                timestamp: new Date(this.deps.clock.now()).toISOString(),
                severity: 'ERROR',
                category: 'REQUEST',
                message: 'Too many requests',
              },
            ],
            { 'retry-after': String(wait) },
          );
        }
      } else {
        org = this.deps.control.defaultOrg();
        const wanted = url.searchParams.get('org');
        if (wanted) {
          org = model.org(wanted);
          if (!org) throw bdc(this.deps.clock, 404, 'BDC_1205', 'Unknown organization.');
        }
      }
      if (area !== 'control' && this.latencyMs > 0) await delay(this.latencyMs);
      if (fault) {
        this.writeFault(res, fault, url);
        return;
      }
      const answer = await route.handle({
        req,
        method,
        path,
        params,
        query: url.searchParams,
        body,
        org: org ?? this.deps.control.defaultOrg(),
        session,
        model,
        gate,
        clock: this.deps.clock,
        webhooks: this.deps.webhooks,
        sandbox: this.control,
      });
      this.write(res, answer.status ?? 200, answer.body, answer.headers);
    } catch (err) {
      if (err instanceof SandboxError) {
        this.writeError(res, err);
        return;
      }
      if (err instanceof QueryError) {
        this.writeError(res, bdc(this.deps.clock, 400, undefined, err.message));
        return;
      }
      if (err instanceof MutationError) {
        this.writeError(res, bdc(this.deps.clock, err.status, err.status === 404 ? 'BDC_1205' : undefined, err.message));
        return;
      }
      throw err;
    } finally {
      release?.();
    }
  }

  private async readBody(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY) throw bdc(this.deps.clock, 413, undefined, 'Request body too large');
      chunks.push(chunk as Buffer);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    if (!text.trim()) return undefined;
    try {
      return JSON.parse(text);
    } catch {
      throw bdc(this.deps.clock, 400, undefined, 'Request body is not valid JSON');
    }
  }

  private async drain(req: IncomingMessage): Promise<void> {
    for await (const _ of req) {
      // discard
    }
  }

  private writeFault(res: ServerResponse, fault: Fault, url: URL): void {
    const ts = new Date(this.deps.clock.now()).toISOString();
    switch (fault.kind) {
      case 'serverError':
        return this.write(res, 500, [{ timestamp: ts, severity: 'ERROR', category: 'SERVER', message: 'Internal server error' }]);
      case 'nonJson':
        res.writeHead(502, { 'content-type': 'text/html' });
        res.end('<html><body><h1>502 Bad Gateway</h1></body></html>');
        return;
      case 'emptyError':
        res.writeHead(503, { 'content-length': '0' });
        res.end();
        return;
      case 'noCodeError':
        return this.write(res, 400, [{ timestamp: ts, severity: 'ERROR', message: 'Request could not be processed' }]);
      case 'emptyPage': {
        const cursorParam = url.searchParams.has('nextPage') ? 'nextPage' : 'page';
        return this.write(res, 200, { nextPage: url.searchParams.get(cursorParam), results: [] });
      }
      default:
        return this.write(res, 500, [{ timestamp: ts, severity: 'ERROR', category: 'SERVER', message: 'fault' }]);
    }
  }

  private write(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    if (body === undefined) {
      res.writeHead(status, { ...headers, 'content-length': '0' });
      res.end();
      return;
    }
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers });
    res.end(text);
  }

  private writeError(res: ServerResponse, err: SandboxError): void {
    for (const e of err.entries) {
      if (e.code) this.deps.stats.errorsByCode[e.code] = (this.deps.stats.errorsByCode[e.code] ?? 0) + 1;
    }
    this.write(res, err.status, err.entries, err.headers);
  }
}

export function listeningUrl(server: Server): string {
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return `http://${host}:${addr.port}`;
}
