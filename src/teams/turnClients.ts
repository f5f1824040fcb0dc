// Bot Connector and user token clients kept between turns: ~10% of the CPU per command (bench overhead, help) is
// what CloudAdapter spends building both anew for every activity, so they are kept per app id, service URL and audience.
import {
  AuthenticationConstants,
  BotFrameworkAuthentication,
  ConnectorFactory,
  type AuthenticateRequestResult,
  type BotFrameworkClient,
  type ClaimsIdentity,
  type ConnectorClient,
  type UserTokenClient,
} from 'botframework-connector';
import type { Activity } from 'botbuilder';

/** Service URLs a deployment talks to are a handful (one per Teams region); this bounds a flood of odd ones. */
const MAX_KEPT_CLIENTS = 64;

/** The app id botbuilder's own factories use for a caller (the token's audience, else its appid claim). */
function appIdOf(identity: ClaimsIdentity | undefined): string {
  return (
    identity?.getClaimValue(AuthenticationConstants.AudienceClaim) ?? identity?.getClaimValue(AuthenticationConstants.AppIdClaim) ?? ''
  );
}

/** A bounded map of promised clients, least recently used first out; a failed creation is not kept. */
class KeptClients<T extends object> {
  private readonly kept = new Map<string, Promise<T>>();

  constructor(private readonly max: number) {}

  get size(): number {
    return this.kept.size;
  }

  get(key: string, make: () => Promise<T>): Promise<T> {
    const hit = this.kept.get(key);
    if (hit) {
      this.kept.delete(key);
      this.kept.set(key, hit);
      return hit;
    }
    const made = make();
    this.kept.set(key, made);
    made.catch(() => {
      if (this.kept.get(key) === made) this.kept.delete(key);
    });
    const oldest = this.kept.keys().next();
    if (this.kept.size > this.max && !oldest.done) this.kept.delete(oldest.value);
    return made;
  }
}

/** Hands out botbuilder's factory's clients once per app id, service URL and audience. */
class KeepingConnectorFactory extends ConnectorFactory {
  constructor(
    private readonly inner: ConnectorFactory,
    private readonly appId: string,
    private readonly clients: KeptClients<ConnectorClient>,
  ) {
    super();
  }

  override create(serviceUrl: string, audience?: string): Promise<ConnectorClient> {
    return this.clients.get(`${this.appId}\n${serviceUrl}\n${audience ?? ''}`, () => this.inner.create(serviceUrl, audience));
  }
}

/** botbuilder's authentication as is, except that inbound turns' connector clients and user token clients are kept. */
export class KeepingAuthentication extends BotFrameworkAuthentication {
  private readonly connectors: KeptClients<ConnectorClient>;
  private readonly tokens: KeptClients<UserTokenClient>;

  constructor(
    private readonly inner: BotFrameworkAuthentication,
    max = MAX_KEPT_CLIENTS,
  ) {
    super();
    this.connectors = new KeptClients(max);
    this.tokens = new KeptClients(max);
  }

  get connectorCount(): number {
    return this.connectors.size;
  }

  override async authenticateRequest(activity: Activity, authHeader: string): Promise<AuthenticateRequestResult> {
    const auth = await this.inner.authenticateRequest(activity, authHeader);
    if (!auth.connectorFactory) return auth;
    return { ...auth, connectorFactory: new KeepingConnectorFactory(auth.connectorFactory, appIdOf(auth.claimsIdentity), this.connectors) };
  }

  override authenticateStreamingRequest(authHeader: string, channelIdHeader: string): Promise<AuthenticateRequestResult> {
    return this.inner.authenticateStreamingRequest(authHeader, channelIdHeader);
  }

  override createConnectorFactory(claimsIdentity: ClaimsIdentity): ConnectorFactory {
    return this.inner.createConnectorFactory(claimsIdentity);
  }

  override createUserTokenClient(claimsIdentity: ClaimsIdentity): Promise<UserTokenClient> {
    return this.tokens.get(appIdOf(claimsIdentity), () => this.inner.createUserTokenClient(claimsIdentity));
  }

  override createBotFrameworkClient(): BotFrameworkClient {
    return this.inner.createBotFrameworkClient();
  }

  override getOriginatingAudience(): string {
    return this.inner.getOriginatingAudience();
  }

  override authenticateChannelRequest(authHeader: string): Promise<ClaimsIdentity> {
    return this.inner.authenticateChannelRequest(authHeader);
  }
}
