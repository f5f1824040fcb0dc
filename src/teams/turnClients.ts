// Bot Connector and user token clients kept between turns: ~10% of the CPU per command (bench overhead, help) is
// what CloudAdapter spends building both anew for every activity, so they are kept per app id, service URL and audience.
import { dropOldest } from '../infra/bounded.js';
import {
  AuthenticationConstants,
  ConnectorFactory,
  type AuthenticateRequestResult,
  type ClaimsIdentity,
  type ConnectorClient,
  type UserTokenClient,
} from 'botframework-connector';
import { ConfigurationBotFrameworkAuthentication, type Activity } from 'botbuilder';

/** Service URLs a deployment talks to are a handful (one per Teams region); this bounds a flood of odd ones. */
const MAX_KEPT_CLIENTS = 64;

/** The app id botbuilder's own factories use for a caller (the token's audience, else its appid claim). */
function appIdOf(identity: ClaimsIdentity | undefined): string {
  return (
    identity?.getClaimValue(AuthenticationConstants.AudienceClaim) ?? identity?.getClaimValue(AuthenticationConstants.AppIdClaim) ?? ''
  );
}

type KeptClients<T> = Map<string, Promise<T>>;

/** The client kept under `key`, else a new one, kept: least recently used first out; a failed creation is not kept. */
function keptClient<T>(kept: KeptClients<T>, key: string, make: () => Promise<T>): Promise<T> {
  const client = kept.get(key) ?? make();
  kept.delete(key);
  kept.set(key, client);
  client.catch(() => {
    if (kept.get(key) === client) kept.delete(key);
  });
  if (kept.size > MAX_KEPT_CLIENTS) dropOldest(kept);
  return client;
}

/** botbuilder's authentication as is, except that inbound turns' connector clients and user token clients are kept. */
export class KeepingAuthentication extends ConfigurationBotFrameworkAuthentication {
  private readonly connectors: KeptClients<ConnectorClient> = new Map();
  private readonly tokens: KeptClients<UserTokenClient> = new Map();

  get connectorCount(): number {
    return this.connectors.size;
  }

  override async authenticateRequest(activity: Activity, authHeader: string): Promise<AuthenticateRequestResult> {
    const auth = await super.authenticateRequest(activity, authHeader);
    const inner = auth.connectorFactory;
    if (!inner) return auth;
    const appId = appIdOf(auth.claimsIdentity);
    const kept = this.connectors;
    // botbuilder's factory's clients, handed out once per app id, service URL and audience.
    const connectorFactory = new (class extends ConnectorFactory {
      override create(serviceUrl: string, audience?: string): Promise<ConnectorClient> {
        return keptClient(kept, `${appId}\n${serviceUrl}\n${audience ?? ''}`, () => inner.create(serviceUrl, audience));
      }
    })();
    return { ...auth, connectorFactory };
  }

  override createUserTokenClient(claimsIdentity: ClaimsIdentity): Promise<UserTokenClient> {
    return keptClient(this.tokens, appIdOf(claimsIdentity), () => super.createUserTokenClient(claimsIdentity));
  }
}
