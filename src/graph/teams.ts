// Microsoft Graph GET /teams/{aadGroupId}: the team's name, description, archived flag and tenant, cached; and the
// Entra client-credentials tokens that read it, one fetch in flight per tenant, cached until shortly before expiry.
import { setTimeout as sleep } from 'node:timers/promises';
import NodeCache from 'node-cache';
import type { Clock } from '../infra/clock.js';
import type { Config } from '../config.js';
import type { Limiter } from '../infra/limits/types.js';
import type { Logger, SecretRegistry } from '../infra/log.js';
import { GraphApiError } from './errors.js';
import { graphError, send, type HttpDeps } from './http.js';

/** What billbridge keeps of a Graph team. */
export interface TeamInfo {
  /** The team's Entra group id. */
  id: string;
  displayName: string;
  description: string | null;
  isArchived: boolean | null;
  tenantId: string | null;
  /** When Graph answered (ms since epoch). */
  fetchedAt: number;
}

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
  private readonly cache: NodeCache;
  private readonly inflight = new Map<string, Promise<TeamInfo>>();
  private readonly tokens = new Map<string, { token: string; renewAt: number }>();
  private readonly tokenFetches = new Map<string, Promise<string>>();
  private readonly http: HttpDeps;

  constructor(private readonly deps: GraphTeamsDeps) {
    const { config } = deps;
    this.http = { limiter: deps.limiter, log: deps.log, sleep: deps.sleep ?? sleep, maxWaitMs: config.limits.commandWaitMs };
    deps.secrets.add(config.bot.appPassword);
    // Team names change rarely: they live as long as other names do.
    this.cache = new NodeCache({
      stdTTL: Math.max(1, config.cache.namesTtlS),
      checkperiod: 0,
      useClones: true,
      maxKeys: config.cache.maxEntries,
    });
  }

  /** GET /teams/{aadGroupId}, cached; a person is waiting for it. Throws GraphApiError. */
  async getTeam(tenantId: string, aadGroupId: string): Promise<TeamInfo> {
    if (!GUID.test(aadGroupId)) {
      // channelData.team.id (19:...@thread.tacv2) is not a Graph id; only the Entra group id is.
      throw new GraphApiError({
        category: 'invalidRequest',
        code: 'InvalidTeamId',
        status: 0,
        message: "Graph needs the team's Entra group id (aadGroupId), not its thread id",
      });
    }
    const key = `${tenantId.toLowerCase()}|${aadGroupId.toLowerCase()}`;
    const hit = this.cache.get<TeamInfo>(key);
    if (hit) return hit;
    return singleFlight(this.inflight, key, async () => {
      const team = await this.fetchTeam(tenantId, aadGroupId);
      this.cache.set(key, team);
      return team;
    });
  }

  /** Forgets a team (the bot was removed from it). */
  forget(tenantId: string, aadGroupId: string): void {
    this.cache.del(`${tenantId.toLowerCase()}|${aadGroupId.toLowerCase()}`);
  }

  close(): void {
    this.cache.close();
  }

  private async fetchTeam(tenantId: string, aadGroupId: string): Promise<TeamInfo> {
    // A SingleTenant (or managed identity) bot can only get tokens in its own tenant; a MultiTenant registration
    // gets them in the team's tenant (where the app was consented).
    const { bot, graph } = this.deps.config;
    const tokenTenant = bot.appType === 'MultiTenant' ? tenantId : bot.tenantId;
    const url = `${graph.baseUrl}/teams/${encodeURIComponent(aadGroupId)}?$select=id,displayName,description,isArchived,tenantId`;
    for (let renewed = false; ; renewed = true) {
      const token = await this.token(tokenTenant);
      const res = await send(this.http, {
        upstream: { service: 'graph', tenantId, teamId: aadGroupId },
        method: 'GET',
        url,
        headers: { authorization: `Bearer ${token}` },
        operation: 'getTeam',
      });
      if (res.status === 200) {
        const t = (res.json ?? {}) as Record<string, unknown>;
        const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
        return {
          id: str(t.id) ?? aadGroupId,
          displayName: str(t.displayName) ?? '',
          description: str(t.description),
          isArchived: typeof t.isArchived === 'boolean' ? t.isArchived : null,
          tenantId: str(t.tenantId),
          fetchedAt: this.deps.clock.now(),
        };
      }
      if (res.status !== 401 || renewed) throw graphError(res, 'getTeam');
      // Revoked or expired early: one more try with a new token. Graph refused it, so it opens nothing any more
      // and need not be scrubbed from logs.
      if (this.tokens.get(tokenTenant)?.token === token) {
        this.deps.secrets.delete(token);
        this.tokens.delete(tokenTenant);
      }
    }
  }

  /** A bearer token for Graph in this tenant. */
  private token(tenantId: string): Promise<string> {
    const cached = this.tokens.get(tenantId);
    if (cached && this.deps.clock.now() < cached.renewAt) return Promise.resolve(cached.token);
    return singleFlight(this.tokenFetches, tenantId, () => this.fetchToken(tenantId));
  }

  private async fetchToken(tenantId: string): Promise<string> {
    const { bot, graph } = this.deps.config;
    const res = await send(this.http, {
      upstream: { service: 'identity', tenantId },
      method: 'POST',
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
      throw new GraphApiError({
        category: res.status === 429 ? 'throttled' : res.status >= 500 ? 'server' : 'auth',
        code,
        status: res.status,
        message: `Entra token request for Graph failed: ${[code, ...aadsts].join(' ')} (HTTP ${res.status})`,
      });
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
