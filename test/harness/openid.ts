// A local Bot Framework token issuer (OpenID metadata + JWKS, keys made here, tokens minted with jose) and a
// login.microsoftonline.com stand-in that issues the bot's outbound client-credentials tokens.
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, UnsecuredJWT, type JWK, type CryptoKey } from 'jose';
import { generate as selfSigned } from 'selfsigned';
import { registerSecrets } from './secretScan.js';

/** The issuer of Bot Connector channel tokens in the public cloud (botbuilder's ToBotFromChannelTokenIssuer). */
const BOT_FRAMEWORK_ISSUER = 'https://api.botframework.com';
/** The host botbuilder's MSAL credentials ask for the bot's own outbound token (public cloud). */
const LOGIN_HOST = 'login.microsoftonline.com';

export interface MintOptions {
  /** Audience: the bot's app id. */
  aud: string;
  /** The activity's serviceUrl; Bot Framework channel tokens carry it as `serviceurl`. Null leaves it out. */
  serviceUrl: string | null;
  iss?: string;
  /** Seconds relative to now. */
  expiresIn?: number;
  notBefore?: number;
  /** Which key signs: the published one (default) or one the JWKS does not list. */
  signWith?: 'published' | 'unpublished';
  /** The `kid` header; defaults to the signing key's id. */
  kid?: string;
  alg?: 'RS256' | 'RS384' | 'RS512';
  claims?: Record<string, unknown>;
}

/** A Teams single sign-on token (what TeamsJS authentication.getAuthToken() gives a tab), as Entra issues it. */
export interface SsoMintOptions {
  tenantId: string;
  /** The person's Entra object id (`oid`). */
  aadObjectId: string;
  /** The app id URI api://{host}/{appId}, or the app id. */
  aud: string;
  name?: string;
  /** Defaults to the v2 issuer of `tenantId`. */
  iss?: string;
  /** Seconds relative to now. */
  expiresIn?: number;
  notBefore?: number;
  signWith?: 'published' | 'unpublished';
  /** Defaults to the scope the app exposes, access_as_user. */
  scp?: string;
  claims?: Record<string, unknown>;
}

interface KeyPair {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

async function rsaKey(kid: string): Promise<KeyPair> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true, modulusLength: 2048 });
  const jwk = await exportJWK(publicKey);
  return { kid, privateKey, jwk: { ...jwk, kid, use: 'sig', alg: 'RS256' } };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Serves `/.well-known/openidconfiguration` and `/keys` on 127.0.0.1 like login.botframework.com does, with
 * an RSA key generated here (endorsed for msteams, as the real JWKS does), and mints channel tokens.
 */
export class OpenIdIssuer {
  url = '';
  /** Paths requested, in order (metadata is fetched once and cached by botbuilder). */
  readonly requests: string[] = [];
  /** Every token minted, for the secret scan and for assertions. */
  readonly minted: string[] = [];
  private readonly server: HttpServer;

  private constructor(
    private readonly published: KeyPair,
    private readonly unpublished: KeyPair,
    private readonly endorsements: string[],
  ) {
    this.server = createHttpServer((req, res) => this.handle(req, res));
  }

  static async start(opts: { endorsements?: string[] } = {}): Promise<OpenIdIssuer> {
    const issuer = new OpenIdIssuer(
      await rsaKey(`bf-test-${randomUUID().slice(0, 8)}`),
      await rsaKey(`rogue-${randomUUID().slice(0, 8)}`),
      opts.endorsements ?? ['msteams'],
    );
    await new Promise<void>((resolve) => issuer.server.listen(0, '127.0.0.1', () => resolve()));
    // Inbound tokens are credentials too: none may be logged.
    registerSecrets(() => issuer.minted);
    issuer.url = `http://127.0.0.1:${(issuer.server.address() as AddressInfo).port}`;
    return issuer;
  }

  /** botbuilder's ToBotFromChannelOpenIdMetadataUrl for this issuer. */
  get metadataUrl(): string {
    return `${this.url}/v1/.well-known/openidconfiguration`;
  }

  /** Where the bot reads the keys of Teams sign-in tokens (TabSsoKeysUrl; Microsoft's common/discovery/v2.0/keys). */
  get ssoKeysUrl(): string {
    return `${this.url}/common/discovery/v2.0/keys`;
  }

  /** The published signing key id. */
  get kid(): string {
    return this.published.kid;
  }

  /** The id of a key the issuer holds but does not publish. */
  get unpublishedKid(): string {
    return this.unpublished.kid;
  }

  /** Environment for startBot(): a real app registration trusting this issuer through botbuilder's own setting. */
  env(appId: string, tenantId: string, password = `pw-${randomBytes(12).toString('hex')}`): Record<string, string> {
    return {
      MicrosoftAppId: appId,
      MicrosoftAppPassword: password,
      MicrosoftAppType: 'SingleTenant',
      MicrosoftAppTenantId: tenantId,
      ALLOWED_TENANT_IDS: tenantId,
      ToBotFromChannelOpenIdMetadataUrl: this.metadataUrl,
    };
  }

  /** A signed Bot Framework channel token. */
  async token(o: MintOptions): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const key = o.signWith === 'unpublished' ? this.unpublished : this.published;
    const payload: Record<string, unknown> = { ...o.claims };
    if (o.serviceUrl !== null) payload.serviceurl = o.serviceUrl;
    const token = await new SignJWT(payload)
      .setProtectedHeader({ alg: o.alg ?? 'RS256', typ: 'JWT', kid: o.kid ?? key.kid })
      .setIssuer(o.iss ?? BOT_FRAMEWORK_ISSUER)
      .setAudience(o.aud)
      .setIssuedAt(now + (o.notBefore ?? 0))
      .setNotBefore(now + (o.notBefore ?? 0))
      .setExpirationTime(now + (o.expiresIn ?? 3600))
      .sign(key.privateKey);
    this.minted.push(token);
    return token;
  }

  /** A signed Teams single sign-on token for a tab, with the claims Entra puts in one (tid, oid, scp, ver). */
  async ssoToken(o: SsoMintOptions): Promise<string> {
    return this.token({
      aud: o.aud,
      serviceUrl: null,
      iss: o.iss ?? `https://login.microsoftonline.com/${o.tenantId}/v2.0`,
      expiresIn: o.expiresIn,
      notBefore: o.notBefore,
      signWith: o.signWith,
      claims: {
        tid: o.tenantId,
        oid: o.aadObjectId,
        name: o.name ?? 'Dana Lee',
        scp: o.scp ?? 'access_as_user',
        ver: '2.0',
        azp: '5e3ce6c0-2b1f-4285-8d4b-75ee78787346',
        ...o.claims,
      },
    });
  }

  /** An `alg: none` token with otherwise valid claims (and the published kid, so only the algorithm is wrong). */
  unsigned(o: MintOptions): string {
    const now = Math.floor(Date.now() / 1000);
    const payload: Record<string, unknown> = { ...o.claims };
    if (o.serviceUrl !== null) payload.serviceurl = o.serviceUrl;
    const base = new UnsecuredJWT(payload)
      .setIssuer(o.iss ?? BOT_FRAMEWORK_ISSUER)
      .setAudience(o.aud)
      .setNotBefore(now)
      .setExpirationTime(now + 3600)
      .encode();
    // jose writes {"alg":"none"}; add the kid so the token gets as far as the algorithm check.
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT', kid: this.published.kid })).toString('base64url');
    const token = `${header}.${base.split('.')[1]}.`;
    this.minted.push(token);
    return token;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    this.requests.push(path);
    if (path === '/v1/.well-known/openidconfiguration') {
      return json(res, 200, {
        issuer: BOT_FRAMEWORK_ISSUER,
        authorization_endpoint: `${this.url}/v1/auth`,
        jwks_uri: `${this.url}/v1/.well-known/keys`,
        id_token_signing_alg_values_supported: ['RS256'],
        token_endpoint_auth_methods_supported: ['private_key_jwt'],
      });
    }
    if (path === '/common/discovery/v2.0/keys') return json(res, 200, { keys: [this.published.jwk] });
    if (path === '/v1/.well-known/keys') {
      return json(res, 200, { keys: [{ ...this.published.jwk, endorsements: this.endorsements }] });
    }
    return json(res, 404, { error: 'not_found' });
  }
}

export interface TokenRequest {
  tenant: string;
  path: string;
  grantType: string | null;
  clientId: string | null;
  clientSecret: string | null;
  scope: string | null;
  at: number;
}

/**
 * Stands in for login.microsoftonline.com over TLS (MSAL talks https only): answers client-credentials token
 * requests and records them. `intercept()` routes the test process's https.globalAgent (what MSAL's default
 * network client uses) for that host to this server and refuses every other https host, so botbuilder's
 * production credentials path runs unchanged: same authority, tenant, scope and secret as in production.
 */
export class LoginStandIn {
  readonly tokenRequests: TokenRequest[] = [];
  /** Every request, "METHOD path". */
  readonly requests: string[] = [];
  readonly issued: string[] = [];
  private port = 0;
  private restoreAgent: (() => void) | undefined;

  private constructor(
    private readonly server: https.Server,
    private readonly cert: string,
  ) {}

  static async start(): Promise<LoginStandIn> {
    const pems = await selfSigned([{ name: 'commonName', value: LOGIN_HOST }], {
      algorithm: 'sha256',
      keySize: 2048,
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: LOGIN_HOST }] }],
    });
    // The handler runs only once the server listens, after standIn is set.
    const server = https.createServer({ key: pems.private, cert: pems.cert }, (req, res) => void standIn.handle(req, res));
    const standIn = new LoginStandIn(server, pems.cert);
    // The bot's outbound access tokens and the client secrets it sent must never be logged.
    registerSecrets(() => [...standIn.issued, ...standIn.tokenRequests.map((r) => r.clientSecret ?? undefined)]);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    standIn.port = (server.address() as AddressInfo).port;
    return standIn;
  }

  /** Routes https for login.microsoftonline.com to this stand-in (and nowhere else) until restore(). */
  intercept(): this {
    if (this.restoreAgent) return this;
    const previous = https.globalAgent;
    const agent = new https.Agent({ keepAlive: false });
    const port = this.port;
    const ca = this.cert;
    (agent as unknown as { createConnection: (o: tls.ConnectionOptions & { host?: string }) => tls.TLSSocket }).createConnection = (
      options,
    ) => {
      const host = options.servername || options.host || '';
      // No network in tests: any other https host gets a refused connection, never the internet.
      if (host !== LOGIN_HOST) return tls.connect({ host: '127.0.0.1', port: 1 });
      return tls.connect({ host: '127.0.0.1', port, servername: LOGIN_HOST, ca });
    };
    https.globalAgent = agent;
    this.restoreAgent = () => {
      https.globalAgent = previous;
      agent.destroy();
    };
    return this;
  }

  async stop(): Promise<void> {
    this.restoreAgent?.();
    this.restoreAgent = undefined;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', `https://${LOGIN_HOST}`);
    const body = await readBody(req);
    this.requests.push(`${req.method} ${url.pathname}`);
    const seg = url.pathname.split('/').filter(Boolean);
    if (req.method === 'POST' && seg.length === 4 && seg[1] === 'oauth2' && seg[2] === 'v2.0' && seg[3] === 'token') {
      const form = new URLSearchParams(body);
      this.tokenRequests.push({
        tenant: seg[0]!,
        path: url.pathname,
        grantType: form.get('grant_type'),
        clientId: form.get('client_id'),
        clientSecret: form.get('client_secret'),
        scope: form.get('scope'),
        at: Date.now(),
      });
      if (form.get('grant_type') !== 'client_credentials' || !form.get('client_secret')) {
        json(res, 400, { error: 'invalid_request', error_description: 'AADSTS900144: The request body must contain client_secret.' });
        return;
      }
      const accessToken = `bf-out-${randomBytes(24).toString('base64url')}`;
      this.issued.push(accessToken);
      json(res, 200, { token_type: 'Bearer', expires_in: 3599, ext_expires_in: 3599, access_token: accessToken });
      return;
    }
    if (req.method === 'GET' && url.pathname.endsWith('/v2.0/.well-known/openid-configuration')) {
      const tenant = seg[0]!;
      const base = `https://${LOGIN_HOST}/${tenant}`;
      json(res, 200, {
        token_endpoint: `${base}/oauth2/v2.0/token`,
        authorization_endpoint: `${base}/oauth2/v2.0/authorize`,
        end_session_endpoint: `${base}/oauth2/v2.0/logout`,
        issuer: `https://login.microsoftonline.com/${tenant}/v2.0`,
        jwks_uri: `https://${LOGIN_HOST}/${tenant}/discovery/v2.0/keys`,
        response_types_supported: ['code', 'id_token', 'code id_token', 'id_token token'],
      });
      return;
    }
    json(res, 404, { error: 'not_found' });
  }
}
