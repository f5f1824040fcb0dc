// Entra client-credentials tokens for Graph: one in flight per tenant, cached until shortly before they expire.
import type { Clock } from '../infra/clock.js';
import type { SecretRegistry } from '../infra/log.js';
import { GraphApiError } from './errors.js';
import { send, type HttpDeps } from './http.js';

const GRAPH_SCOPE = 'https://graph.microsoft.com/.default';
/** Renew this long before expiry (tokens live about an hour), so no call goes out with a token about to lapse. */
const RENEW_BEFORE_MS = 5 * 60_000;

interface Cached {
  token: string;
  renewAt: number;
}

export interface ClientCredentials {
  authorityHost: string;
  clientId: string;
  clientSecret: string;
}

export class ClientCredentialsTokens {
  private readonly cache = new Map<string, Cached>();
  private readonly inflight = new Map<string, Promise<string>>();

  constructor(
    private readonly creds: ClientCredentials,
    private readonly http: HttpDeps,
    private readonly clock: Clock,
    private readonly secrets: SecretRegistry,
  ) {
    secrets.add(creds.clientSecret);
  }

  /** A bearer token for Graph in this tenant. */
  async token(tenantId: string, priority: 'interactive' | 'background' = 'interactive'): Promise<string> {
    const cached = this.cache.get(tenantId);
    if (cached && this.clock.now() < cached.renewAt) return cached.token;
    let pending = this.inflight.get(tenantId);
    if (!pending) {
      pending = this.fetch(tenantId, priority).finally(() => this.inflight.delete(tenantId));
      this.inflight.set(tenantId, pending);
    }
    return pending;
  }

  /** Drops the cached token (after a 401), so the next call fetches a new one. */
  invalidate(tenantId: string, token: string): void {
    if (this.cache.get(tenantId)?.token === token) this.forget(tenantId);
  }

  /** Drops a tenant's cached token and stops scrubbing it: Graph refused it, so it opens nothing any more. */
  private forget(tenantId: string): void {
    this.secrets.delete(this.cache.get(tenantId)?.token);
    this.cache.delete(tenantId);
  }

  private async fetch(tenantId: string, priority: 'interactive' | 'background'): Promise<string> {
    const body = new URLSearchParams({
      client_id: this.creds.clientId,
      client_secret: this.creds.clientSecret,
      scope: GRAPH_SCOPE,
      grant_type: 'client_credentials',
    }).toString();
    const res = await send(this.http, {
      upstream: { service: 'identity', tenantId },
      priority,
      method: 'POST',
      url: `${this.creds.authorityHost}/${encodeURIComponent(tenantId)}/oauth2/v2.0/token`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
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
    const margin = Math.min(RENEW_BEFORE_MS, lifetimeMs / 2);
    // Scrubbed for as long as it is valid, then forgotten, so a new token every hour does not grow the registry.
    this.secrets.add(token, lifetimeMs);
    this.cache.set(tenantId, { token, renewAt: this.clock.now() + Math.max(0, lifetimeMs - margin) });
    return token;
  }
}
