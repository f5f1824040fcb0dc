// Local stand-ins for the Entra token endpoint and Microsoft Graph GET /teams/{id}, with scriptable answers.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';

export interface GraphCall {
  kind: 'token' | 'team' | 'other';
  method: string;
  path: string;
  /** Tenant in the token path, team id in the Graph path. */
  tenantId?: string;
  teamId?: string;
  /** Form fields of a token request. */
  form?: Record<string, string>;
  authorization?: string;
  at: number;
  status: number;
}

export interface GraphScriptedResponse {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

export type GraphScript = (call: GraphCall) => GraphScriptedResponse | undefined;

export interface StandInTeam {
  id: string;
  displayName: string;
  description?: string | null;
  isArchived?: boolean;
  tenantId: string;
}

/** Serves `{base}/{tenant}/oauth2/v2.0/token` (authority host) and `{base}/v1.0/teams/{id}` (Graph base). */
export class GraphStandIn {
  readonly calls: GraphCall[] = [];
  readonly teams = new Map<string, StandInTeam>();
  /** The client secret the token endpoint accepts. */
  clientSecret = 'graph-test-secret';
  clientId = '';
  /** Seconds a token lives. */
  expiresIn = 3599;
  private readonly issued = new Set<string>();
  private scripts: GraphScript[] = [];
  private readonly server: Server;
  private readonly events = new EventEmitter();
  url = '';

  constructor() {
    this.server = createServer((req, res) => void this.handle(req, res));
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Config for the bot: GRAPH_BASE_URL and GRAPH_AUTHORITY_HOST pointing here. */
  env(): Record<string, string> {
    return { GRAPH_BASE_URL: `${this.url}/v1.0`, GRAPH_AUTHORITY_HOST: this.url };
  }

  addTeam(team: StandInTeam): void {
    this.teams.set(team.id.toLowerCase(), team);
  }

  /** Consulted before the default answer; first non-undefined wins. Returns a remover. */
  script(fn: GraphScript): () => void {
    this.scripts.push(fn);
    return () => {
      this.scripts = this.scripts.filter((s) => s !== fn);
    };
  }

  /** Answers the next `times` calls of a kind with the response. */
  failNext(kind: GraphCall['kind'], times: number, response: GraphScriptedResponse): void {
    let left = times;
    this.script((call) => {
      if (call.kind !== kind || left <= 0) return undefined;
      left--;
      return response;
    });
  }

  /** Revokes every token issued so far (Graph answers 401 to them). */
  revokeTokens(): void {
    this.issued.clear();
  }

  waitFor<T>(predicate: (calls: GraphCall[]) => T | undefined | false, timeoutMs = 10_000): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const check = () => {
        const v = predicate(this.calls);
        if (v) {
          cleanup();
          resolve(v);
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out waiting for graph calls; saw ${this.calls.map((c) => `${c.kind}:${c.status}`).join(', ')}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.events.off('call', check);
      };
      this.events.on('call', check);
      check();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', this.url);
    const seg = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    const call: GraphCall = { kind: 'other', method: req.method ?? 'GET', path: url.pathname, at: Date.now(), status: 0 };
    if (typeof req.headers.authorization === 'string') call.authorization = req.headers.authorization;
    if (req.method === 'POST' && seg.length === 4 && seg[1] === 'oauth2' && seg[2] === 'v2.0' && seg[3] === 'token') {
      call.kind = 'token';
      call.tenantId = seg[0];
      call.form = Object.fromEntries(new URLSearchParams(raw));
    } else if (req.method === 'GET' && seg.length === 3 && seg[0] === 'v1.0' && seg[1] === 'teams') {
      call.kind = 'team';
      call.teamId = seg[2];
    }
    let response: GraphScriptedResponse | undefined;
    for (const s of this.scripts) {
      response = s(call);
      if (response) break;
    }
    response ??= this.defaultResponse(call);
    call.status = response.status;
    this.calls.push(call);
    res.writeHead(response.status, { 'content-type': 'application/json', ...response.headers });
    res.end(response.body === undefined ? '' : JSON.stringify(response.body));
    this.events.emit('call');
  }

  private graphError(status: number, code: string, message: string): GraphScriptedResponse {
    return { status, body: { error: { code, message, innerError: { 'request-id': randomUUID(), date: new Date().toISOString() } } } };
  }

  private defaultResponse(call: GraphCall): GraphScriptedResponse {
    if (call.kind === 'token') {
      const f = call.form ?? {};
      if (f.grant_type !== 'client_credentials' || f.scope !== 'https://graph.microsoft.com/.default') {
        return { status: 400, body: { error: 'invalid_request', error_description: 'AADSTS900144: bad request', error_codes: [900144] } };
      }
      if (f.client_secret !== this.clientSecret || (this.clientId !== '' && f.client_id !== this.clientId)) {
        return {
          status: 401,
          body: { error: 'invalid_client', error_description: 'AADSTS7000215: Invalid client secret provided.', error_codes: [7000215] },
        };
      }
      const token = `eyJ0eXAiOiJKV1QifQ.${randomUUID()}.sig`;
      this.issued.add(token);
      return {
        status: 200,
        body: { token_type: 'Bearer', expires_in: this.expiresIn, ext_expires_in: this.expiresIn, access_token: token },
      };
    }
    if (call.kind === 'team') {
      const token = call.authorization?.replace(/^Bearer /, '');
      if (!token || !this.issued.has(token)) return this.graphError(401, 'InvalidAuthenticationToken', 'Access token is empty or invalid.');
      const team = this.teams.get((call.teamId ?? '').toLowerCase());
      if (!team) return this.graphError(404, 'NotFound', `No team found with Group Id ${call.teamId ?? ''}`);
      return {
        status: 200,
        body: {
          '@odata.context': `${this.url}/v1.0/$metadata#teams(id,displayName,description,isArchived,tenantId)/$entity`,
          id: team.id,
          displayName: team.displayName,
          description: team.description ?? null,
          isArchived: team.isArchived ?? false,
          tenantId: team.tenantId,
        },
      };
    }
    return this.graphError(404, 'UnknownRoute', 'No such route in the Graph stand-in');
  }
}
