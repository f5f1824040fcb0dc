// Teams single sign-on for the dashboard tab: the token TeamsJS authentication.getAuthToken() gives the page, checked
// as Microsoft documents for a tab's server side (learn.microsoft.com/microsoftteams/platform/tabs/how-to/authentication/
// tab-sso-code, "Validate the access token"): signature by a key Microsoft publishes, issuer of the token's own tenant,
// audience the app id URI the manifest's webApplicationInfo declares (or the app id), not expired, scope access_as_user.
import type { JWTPayload } from 'jose';
import { NamedError } from '../errors.js';

/** Microsoft's signing keys for Entra tokens of every tenant (v1 and v2 tokens are signed by the same keys). */
const MICROSOFT_KEYS_URL = 'https://login.microsoftonline.com/common/discovery/v2.0/keys';
/** The scope the app registration exposes for Teams (see README, "Dashboard tab"). */
const SSO_SCOPE = 'access_as_user';
/** Entra and Bot Framework tokens are a few KB; anything far beyond that is not one. */
const MAX_TOKEN_LENGTH = 16 * 1024;
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface TabPerson {
  tenantId: string;
  /** Entra object id (what Teams sends as from.aadObjectId). */
  aadObjectId: string;
  name: string | undefined;
}

/** Why a request gets no dashboard: the HTTP status and a sentence for the person (never a claim of the token). */
export class TabRefused extends NamedError {
  constructor(
    readonly status: 401 | 403 | 404 | 429 | 503,
    message: string,
    /** For the log: what was wrong, in a few words. */
    readonly reason: string,
    readonly retryAfterS?: number,
  ) {
    super(message);
  }
}

const SIGN_IN_AGAIN = 'Your Teams sign-in could not be checked. Close the tab and open it again.';

/**
 * The person a tab's Authorization header names, or TabRefused (401; 503 when Microsoft's keys cannot be read). The app
 * id URI is api://{PUBLIC_HOSTNAME}/{appId}; `keysUrl` (TabSsoKeysUrl) is an override for tests and sovereign clouds.
 */
export function tabSso(opts: { appId: string; publicHostname: string; keysUrl: string | undefined }) {
  // jose is loaded by the first tab request, not at start: a bot whose tab nobody opens never holds it.
  // It keeps the key set (10 minutes) and fetches it again for an unknown kid at most every 30 s.
  const load = async () => {
    const { createRemoteJWKSet, errors, jwtVerify } = await import('jose');
    return { keys: createRemoteJWKSet(new URL(opts.keysUrl ?? MICROSOFT_KEYS_URL), { timeoutDuration: 5_000 }), errors, jwtVerify };
  };
  let jose: ReturnType<typeof load> | undefined;
  const audiences = [...(opts.publicHostname ? [`api://${opts.publicHostname}/${opts.appId}`] : []), opts.appId];
  return async (authorization: unknown): Promise<TabPerson> => {
    if (opts.appId === '')
      throw new TabRefused(401, 'This billbridge runs without a Microsoft app id, so it cannot check who you are.', 'local mode');
    const token = bearerJwt(authorization);
    if (!token && typeof authorization !== 'string')
      throw new TabRefused(401, 'Open this tab inside Teams: it needs your Teams sign-in.', 'no bearer token');
    if (!token) throw new TabRefused(401, SIGN_IN_AGAIN, 'malformed token');
    const { keys, errors, jwtVerify } = await (jose ??= load());
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys, { audience: audiences, algorithms: ['RS256'], clockTolerance: 60 }));
    } catch (err) {
      // Microsoft's keys could not be read (timeout, network, not a key set; jose's generic error is a key set that
      // answered another status than 200): our problem, not the token's.
      if (
        !(err instanceof errors.JOSEError) ||
        err instanceof errors.JWKSTimeout ||
        err instanceof errors.JWKSInvalid ||
        err.code === 'ERR_JOSE_GENERIC'
      )
        throw new TabRefused(503, 'Microsoft sign-in cannot be checked right now. Try again in a minute.', 'signing keys unavailable', 60);
      throw new TabRefused(401, SIGN_IN_AGAIN, err.code);
    }
    const { tid, oid } = payload;
    if (typeof tid !== 'string' || !GUID.test(tid) || typeof oid !== 'string' || !GUID.test(oid))
      throw new TabRefused(401, SIGN_IN_AGAIN, 'no tenant or person');
    // The issuer names the token's own tenant: v2 tokens, or v1 tokens (an app registration left at version 1).
    if (payload.iss !== `https://login.microsoftonline.com/${tid}/v2.0` && payload.iss !== `https://sts.windows.net/${tid}/`)
      throw new TabRefused(401, SIGN_IN_AGAIN, 'issuer');
    const scopes = typeof payload.scp === 'string' ? payload.scp.split(' ') : [];
    if (!scopes.includes(SSO_SCOPE)) throw new TabRefused(401, SIGN_IN_AGAIN, 'scope');
    return {
      tenantId: tid.toLowerCase(),
      aadObjectId: oid.toLowerCase(),
      name: typeof payload.name === 'string' ? payload.name : undefined,
    };
  };
}

/** The token of "Bearer <a JWT's three base64url parts>", or undefined. Only the shape: jwtVerify refuses alg none. */
export function bearerJwt(header: unknown): string | undefined {
  if (typeof header !== 'string' || header.length > MAX_TOKEN_LENGTH + 7) return undefined;
  return /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)$/i.exec(header.trim())?.[1];
}
