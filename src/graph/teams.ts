// Microsoft Graph GET /teams/{aadGroupId}: the team's name, description, archived flag and tenant, cached.
import NodeCache from 'node-cache';
import type { Clock } from '../infra/clock.js';
import type { Config } from '../config.js';
import type { Limiter, Priority } from '../infra/limits/types.js';
import type { Logger, SecretRegistry } from '../infra/log.js';
import { GraphApiError } from './errors.js';
import { graphError, realSleep, send, type HttpDeps, type Sleep } from './http.js';
import { ClientCredentialsTokens } from './token.js';

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

export interface GraphTeamsDeps {
  config: Config;
  limiter: Limiter;
  clock: Clock;
  log: Logger;
  secrets: SecretRegistry;
  /** Waits between retries; tests pass a recording one. */
  sleep?: Sleep;
}

export class GraphTeams {
  private readonly cache: NodeCache;
  private readonly inflight = new Map<string, Promise<TeamInfo>>();
  private readonly http: HttpDeps;
  private readonly tokens: ClientCredentialsTokens;

  constructor(private readonly deps: GraphTeamsDeps) {
    const { config } = deps;
    this.http = { limiter: deps.limiter, log: deps.log, sleep: deps.sleep ?? realSleep, interactiveMaxWaitMs: config.limits.commandWaitMs };
    this.tokens = new ClientCredentialsTokens(
      { authorityHost: config.graph.authorityHost, clientId: config.bot.appId, clientSecret: config.bot.appPassword },
      this.http,
      deps.clock,
      deps.secrets,
    );
    // Team names change rarely: they live as long as other names do.
    this.cache = new NodeCache({
      stdTTL: Math.max(1, config.cache.namesTtlS),
      checkperiod: 0,
      useClones: true,
      maxKeys: config.cache.maxEntries,
    });
  }

  /**
   * The tenant whose token reads the team: a SingleTenant (or managed identity) bot can only get tokens in its
   * own tenant; a MultiTenant registration gets them in the team's tenant (where the app was consented).
   */
  private tokenTenant(teamTenantId: string): string {
    const { bot } = this.deps.config;
    return bot.appType === 'MultiTenant' ? teamTenantId : bot.tenantId;
  }

  /** GET /teams/{aadGroupId}; a cached answer unless `fresh`. Throws GraphApiError. */
  async getTeam(tenantId: string, aadGroupId: string, opts: { priority?: Priority; fresh?: boolean } = {}): Promise<TeamInfo> {
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
    if (!opts.fresh) {
      const hit = this.cache.get<TeamInfo>(key);
      if (hit) return hit;
    }
    let pending = this.inflight.get(key);
    if (!pending) {
      pending = this.fetchTeam(tenantId, aadGroupId, opts.priority ?? 'interactive')
        .then((team) => {
          this.cache.set(key, team);
          return team;
        })
        .finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    return pending;
  }

  /** Forgets a team (the bot was removed from it). */
  forget(tenantId: string, aadGroupId: string): void {
    this.cache.del(`${tenantId.toLowerCase()}|${aadGroupId.toLowerCase()}`);
  }

  close(): void {
    this.cache.close();
  }

  private async fetchTeam(tenantId: string, aadGroupId: string, priority: Priority): Promise<TeamInfo> {
    const tokenTenant = this.tokenTenant(tenantId);
    const url = `${this.deps.config.graph.baseUrl}/teams/${encodeURIComponent(aadGroupId)}?$select=id,displayName,description,isArchived,tenantId`;
    for (let renewed = false; ; renewed = true) {
      const token = await this.tokens.token(tokenTenant, priority);
      const res = await send(this.http, {
        upstream: { service: 'graph', tenantId, teamId: aadGroupId },
        priority,
        method: 'GET',
        url,
        headers: { authorization: `Bearer ${token}` },
        operation: 'getTeam',
      });
      if (res.status === 200) return this.toTeam(res.json, aadGroupId);
      if (res.status === 401 && !renewed) {
        // Revoked or expired early: one more try with a new token.
        this.tokens.invalidate(tokenTenant, token);
        continue;
      }
      throw graphError(res, 'getTeam');
    }
  }

  private toTeam(json: unknown, aadGroupId: string): TeamInfo {
    const t = (json ?? {}) as Record<string, unknown>;
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
}

/** Graph is used only with a bot registration: in local mode (no app id) there is no identity to ask with. */
export function createGraphTeams(deps: GraphTeamsDeps): GraphTeams | undefined {
  const { bot } = deps.config;
  if (bot.appId === '' || bot.appType === 'UserAssignedMSI' || bot.appPassword === '') return undefined;
  return new GraphTeams(deps);
}
