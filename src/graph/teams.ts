// Microsoft Graph GET /teams/{aadGroupId}: the team's name, description, archived flag and tenant, cached; and the
// Entra client-credentials tokens that read it, one fetch in flight per tenant, cached until shortly before expiry.
// Both go through the shared limiter, sit through Retry-After, and fail with a typed GraphApiError.
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { z } from 'zod';
import { readCapped } from '../infra/bodies.js';
import { dropOldest } from '../infra/bounded.js';
import type { Clock } from '../infra/clock.js';
import type { Config } from '../config.js';
import { NamedError } from '../errors.js';
import type { Limiter, Upstream } from '../infra/limits/types.js';
import { backoffMs, retryAfterMs } from '../infra/limits/windows.js';
import type { Logger, SecretRegistry } from '../infra/log.js';

export type GraphErrorCategory =
  | 'auth' // token endpoint refused the app (invalid_client, unauthorized_client...) or Graph said 401
  | 'forbidden' // 403: no permission (RSC not granted, admin consent missing)
  | 'notFound' // 404 itemNotFound: no such team, or the app cannot see it
  | 'throttled' // 429 (or 503 with Retry-After) that outlasted the retries
  | 'server' // 5xx
  | 'network' // no answer at all (refused, reset, timeout)
  | 'invalidRequest' // the request was wrong before it was sent (e.g. a 19:... thread id instead of a group id)
  | 'unknown';

/** The message names the operation, code and status: upstream messages can quote ids, so they stay out of it. */
export class GraphApiError extends NamedError {
  constructor(
    readonly category: GraphErrorCategory,
    /** Graph's error.code (e.g. itemNotFound), the token endpoint's error (e.g. invalid_client), or ours. */
    readonly code: string,
    /** HTTP status; 0 when no answer came back. */
    readonly status: number,
    message: string,
    /** Graph's innerError request-id, for support cases. */
    readonly requestId?: string,
    /** How long the service asked us to wait (Retry-After), when it did. */
    readonly retryAfterMs?: number,
    /** What failed underneath (no answer from Graph), for diagnostics. */
    cause?: unknown,
  ) {
    super(message, { cause });
  }
}

const GRAPH_TIMEOUT_MS = 10_000;
/** A token or team answer is a few KB: one larger than this is refused unread. */
const MAX_BODY_BYTES = 1024 * 1024;
/** Retries after a 429/503/504 (so at most three attempts). */
const MAX_RETRIES = 2;

interface GraphResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Undefined when the body was empty or not JSON (the status says what happened). */
  json: unknown;
}

const CATEGORY_OF_STATUS: Partial<Record<number, GraphErrorCategory>> = {
  401: 'auth',
  403: 'forbidden',
  404: 'notFound',
  429: 'throttled',
};

/** Graph's `{error:{code,message,innerError:{'request-id'}}}` answering GET /teams/{id} -> GraphApiError. */
function graphError(res: GraphResponse): GraphApiError {
  const body = (res.json ?? {}) as { error?: { code?: unknown; innerError?: { 'request-id'?: unknown } } };
  const code = typeof body.error?.code === 'string' ? body.error.code : `HTTP${res.status}`;
  const requestId = body.error?.innerError?.['request-id'] ?? res.headers['request-id'];
  return new GraphApiError(
    CATEGORY_OF_STATUS[res.status] ?? (res.status >= 500 ? 'server' : 'unknown'),
    code,
    res.status,
    `getTeam: Graph ${code} (HTTP ${res.status})`,
    typeof requestId === 'string' ? requestId : undefined,
    retryAfterMs(res.headers['retry-after'], Date.now()),
  );
}

/** What billbridge keeps of a Graph team: a field Graph left out or sent as another type reads as null (the name as ''). */
const GraphTeam = z.object({
  displayName: z.string().catch(''),
  description: z.string().nullable().catch(null),
  isArchived: z.boolean().nullable().catch(null),
  tenantId: z.string().nullable().catch(null),
});
/** `fetchedAt`: when Graph answered (ms since epoch). */
export type TeamInfo = z.infer<typeof GraphTeam> & { fetchedAt: number };

const GUID = /^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$/;
/** Renew this long before expiry (tokens live about an hour), so no call goes out with a token about to lapse. */
const RENEW_BEFORE_MS = 5 * 60_000;

interface GraphTeamsDeps {
  config: Config;
  limiter: Limiter;
  clock: Clock;
  log: Logger;
  secrets: SecretRegistry;
  /** Waits between retries; tests pass a recording one. */
  sleep?: (ms: number) => Promise<unknown>;
  /** A request's whole time, body included (default 10 s). */
  timeoutMs?: number;
}

/** One promise per key while it runs: concurrent callers share it. */
function singleFlight<T>(inflight: Map<string, Promise<T>>, key: string, start: () => Promise<T>): Promise<T> {
  let pending = inflight.get(key);
  if (!pending) {
    pending = start().finally(() => inflight.delete(key));
    inflight.set(key, pending);
  }
  return pending;
}

export class GraphTeams {
  /** Team names by tenant and group id, oldest first; they change rarely, so they live as long as other names do. */
  private readonly cache = new Map<string, { team: TeamInfo; until: number }>();
  private readonly inflight = new Map<string, Promise<TeamInfo>>();
  private readonly tokens = new Map<string, { token: string; renewAt: number }>();
  private readonly tokenFetches = new Map<string, Promise<string>>();

  constructor(private readonly deps: GraphTeamsDeps) {}

  /** GET /teams/{aadGroupId}, cached; a person is waiting for it. Throws GraphApiError. */
  async getTeam(tenantId: string, aadGroupId: string): Promise<TeamInfo> {
    // channelData.team.id (19:...@thread.tacv2) is not a Graph id; only the Entra group id is.
    if (!GUID.test(aadGroupId))
      throw new GraphApiError(
        'invalidRequest',
        'InvalidTeamId',
        0,
        "Graph needs the team's Entra group id (aadGroupId), not its thread id",
      );
    const key = `${tenantId.toLowerCase()}|${aadGroupId.toLowerCase()}`;
    const hit = this.cache.get(key);
    // A copy: no caller can change what the next one reads.
    if (hit && hit.until > this.deps.clock.now()) return { ...hit.team };
    return singleFlight(this.inflight, key, async () => {
      const team = await this.fetchTeam(tenantId, aadGroupId);
      const { namesTtlS, maxEntries } = this.deps.config.cache;
      this.cache.delete(key);
      // Past CACHE_MAX_ENTRIES teams the oldest makes room.
      if (this.cache.size >= maxEntries) dropOldest(this.cache);
      this.cache.set(key, { team: { ...team }, until: this.deps.clock.now() + Math.max(1, namesTtlS) * 1000 });
      return team;
    });
  }

  /** Forgets a team (the bot was removed from it). */
  forget(tenantId: string, aadGroupId: string): void {
    this.cache.delete(`${tenantId.toLowerCase()}|${aadGroupId.toLowerCase()}`);
  }

  close(): void {
    this.cache.clear();
  }

  private async fetchTeam(tenantId: string, aadGroupId: string): Promise<TeamInfo> {
    // A SingleTenant bot gets tokens only in its own tenant; a MultiTenant one in the team's (where the app was consented).
    const { bot, graph } = this.deps.config;
    const tokenTenant = bot.appType === 'MultiTenant' ? tenantId : bot.tenantId;
    const url = `${graph.baseUrl}/teams/${encodeURIComponent(aadGroupId)}?$select=id,displayName,description,isArchived,tenantId`;
    for (let renewed = false; ; renewed = true) {
      const token = await this.token(tokenTenant);
      const res = await this.send({
        upstream: { service: 'graph', tenantId, teamId: aadGroupId },
        url,
        headers: { authorization: `Bearer ${token}` },
        operation: 'getTeam',
      });
      if (res.status === 200) {
        // An answer that is not an object reads as a team with nothing known.
        const team = GraphTeam.safeParse(res.json).data ?? GraphTeam.parse({});
        return { ...team, fetchedAt: this.deps.clock.now() };
      }
      if (res.status !== 401 || renewed) throw graphError(res);
      // Revoked or expired early: one more try with a new token. The refused one opens nothing, so needs no scrubbing.
      if (this.tokens.get(tokenTenant)?.token === token) {
        this.deps.secrets.delete(token);
        this.tokens.delete(tokenTenant);
      }
    }
  }

  /** One request (a POST when it has a body) under the limiter; 429, 503 and 504 are retried after Retry-After (told to the
   * limiter too, so every caller of that budget waits) or a short backoff. */
  private async send(opts: {
    upstream: Upstream;
    url: string;
    headers: Record<string, string>;
    body?: string;
    /** Short name for logs ("token", "getTeam"); the URL is never logged with query or secrets. */
    operation: string;
  }): Promise<GraphResponse> {
    const { limiter, log } = this.deps;
    for (let attempt = 0; ; attempt++) {
      let endBy: number | undefined;
      const res = await limiter.run(opts.upstream, { priority: 'interactive' }, async (call): Promise<GraphResponse> => {
        // undici's body timeout is between chunks: the timeout is the whole request's, so a body that trickles ends too,
        // and it ends with the person's turn when that comes first.
        endBy = call.endBy;
        const own = this.deps.timeoutMs ?? GRAPH_TIMEOUT_MS;
        const signal = AbortSignal.timeout(endBy === undefined ? own : Math.min(own, Math.max(0, endBy - this.deps.clock.now())));
        let text: string | undefined;
        let answer: Awaited<ReturnType<typeof request>>;
        try {
          answer = await request(opts.url, {
            method: opts.body === undefined ? 'GET' : 'POST',
            headers: { accept: 'application/json', ...opts.headers },
            body: opts.body,
            signal,
          });
          text = await readCapped(answer.body, answer.headers['content-length'], MAX_BODY_BYTES);
        } catch (err) {
          const code = signal.aborted ? 'Timeout' : ((err as { code?: string }).code ?? 'NetworkError');
          throw new GraphApiError('network', code, 0, `${opts.operation}: no answer (${code})`, undefined, undefined, err);
        }
        if (text === undefined)
          throw new GraphApiError('network', 'TooLarge', 0, `${opts.operation}: answer too large (over ${MAX_BODY_BYTES} bytes)`);
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        return { status: answer.statusCode, headers: answer.headers, json };
      });
      if (res.status !== 429 && res.status !== 503 && res.status !== 504) return res;
      const retryAfter = retryAfterMs(res.headers['retry-after'], Date.now());
      if (retryAfter !== undefined) limiter.throttled(opts.upstream, { kind: 'retryAfter', ms: retryAfter });
      const wait = retryAfter ?? backoffMs(attempt, 500, 4_000);
      // A person's turn with no time left for another attempt gets this answer now.
      const late = endBy !== undefined && this.deps.clock.now() + wait >= endBy;
      const giveUp = attempt >= MAX_RETRIES || wait > this.deps.config.limits.commandWaitMs || late;
      log.info(
        { operation: opts.operation, status: res.status, attempt, retryAfterMs: retryAfter, giveUp },
        'graph throttled or unavailable',
      );
      if (giveUp) return res;
      await (this.deps.sleep ?? sleep)(wait);
    }
  }

  private token(tenantId: string): Promise<string> {
    const cached = this.tokens.get(tenantId);
    if (cached && this.deps.clock.now() < cached.renewAt) return Promise.resolve(cached.token);
    return singleFlight(this.tokenFetches, tenantId, () => this.fetchToken(tenantId));
  }

  private async fetchToken(tenantId: string): Promise<string> {
    const { bot, graph } = this.deps.config;
    const res = await this.send({
      upstream: { service: 'identity', tenantId },
      url: `${graph.authorityHost}/${encodeURIComponent(tenantId)}/oauth2/v2.0/token`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        client_id: bot.appId,
        client_secret: bot.appPassword,
        scope: 'https://graph.microsoft.com/.default',
        grant_type: 'client_credentials',
      }).toString(),
      operation: 'token',
    });
    const json = (res.json ?? {}) as { access_token?: unknown; expires_in?: unknown; error?: unknown; error_codes?: unknown };
    if (res.status !== 200 || typeof json.access_token !== 'string') {
      // {error, error_description: "AADSTS...", error_codes: [...]}: keep the code and AADSTS numbers only.
      const code = typeof json.error === 'string' ? json.error : `HTTP${res.status}`;
      const aadsts = Array.isArray(json.error_codes) ? json.error_codes.filter((c) => typeof c === 'number').map((c) => `AADSTS${c}`) : [];
      throw new GraphApiError(
        res.status === 429 ? 'throttled' : res.status >= 500 ? 'server' : 'auth',
        code,
        res.status,
        `Entra token request for Graph failed: ${[code, ...aadsts].join(' ')} (HTTP ${res.status})`,
      );
    }
    const token = json.access_token;
    const seconds = Number(json.expires_in ?? 3599);
    const lifetimeMs = (Number.isFinite(seconds) && seconds > 0 ? seconds : 3599) * 1000;
    // Scrubbed for as long as it is valid, then forgotten, so a new token every hour does not grow the registry.
    this.deps.secrets.add(token, lifetimeMs);
    this.tokens.set(tenantId, { token, renewAt: this.deps.clock.now() + lifetimeMs - Math.min(RENEW_BEFORE_MS, lifetimeMs / 2) });
    return token;
  }
}

/** Graph is used only with a bot registration: in local mode (no app id) there is no identity to ask with. */
export function createGraphTeams(deps: GraphTeamsDeps): GraphTeams | undefined {
  const { bot } = deps.config;
  if (bot.appId === '' || bot.appType === 'UserAssignedMSI' || bot.appPassword === '') return undefined;
  return new GraphTeams(deps);
}
