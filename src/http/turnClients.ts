// The Bot Connector and token clients of inbound turns, kept between turns. botbuilder's CloudAdapter builds a new
// ConnectorClient (an @azure/core-client ServiceClient with its whole HTTP pipeline) and a new UserTokenClient for
// every activity it receives, then drops them: about a tenth of the CPU a simple command costs. Both are stateless
// between requests (their credentials fetch and renew their own tokens), so billbridge keeps one per app id,
// service URL and audience and hands the same ones out, as botbuilder's C# BotFrameworkAdapter keeps its connector
// clients per service URL and app id ("a significant boost in throughput", its source says).
import {
  AuthenticationConstants,
  ConnectorFactory,
  type AuthenticateRequestResult,
  type BotFrameworkAuthentication,
  type ClaimsIdentity,
  type ConnectorClient,
  type UserTokenClient,
} from 'botframework-connector';

/** Service URLs a deployment talks to are a handful (one per Teams region); this bounds a flood of odd ones. */
export const MAX_KEPT_CLIENTS = 64;

/** Connector clients that several turns share: their pipelines must not carry one turn's settings. */
const shared = new WeakSet<object>();

/** True for a connector client this module hands to more than one turn. */
export function isSharedClient(client: unknown): boolean {
  return typeof client === 'object' && client !== null && shared.has(client);
}

/** The app id botbuilder's own factories use for a caller (the token's audience, else its appid claim). */
function appIdOf(identity: ClaimsIdentity | undefined): string {
  return identity?.getClaimValue(AuthenticationConstants.AudienceClaim) ?? identity?.getClaimValue(AuthenticationConstants.AppIdClaim) ?? '';
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
    if (this.kept.size > this.max) this.kept.delete(this.kept.keys().next().value!);
    return made;
  }
}

/** Hands botbuilder's per-turn factories' clients out once per app id, service URL and audience. */
class KeepingConnectorFactory extends ConnectorFactory {
  constructor(
    private readonly inner: ConnectorFactory,
    private readonly appId: string,
    private readonly clients: KeptClients<ConnectorClient>,
  ) {
    super();
  }

  override create(serviceUrl: string, audience?: string): Promise<ConnectorClient> {
    return this.clients.get(`${this.appId}\n${serviceUrl}\n${audience ?? ''}`, async () => {
      const client = await this.inner.create(serviceUrl, audience);
      shared.add(client);
      return client;
    });
  }
}

export class TurnClients {
  private readonly connectors: KeptClients<ConnectorClient>;
  private readonly tokens: KeptClients<UserTokenClient>;

  constructor(max = MAX_KEPT_CLIENTS) {
    this.connectors = new KeptClients(max);
    this.tokens = new KeptClients(max);
  }

  /** Connector clients kept now (for tests and status). */
  get connectorCount(): number {
    return this.connectors.size;
  }

  /** The authenticated request with a factory that hands out kept connector clients. */
  forTurn(auth: AuthenticateRequestResult): AuthenticateRequestResult {
    if (!auth.connectorFactory) return auth;
    return { ...auth, connectorFactory: new KeepingConnectorFactory(auth.connectorFactory, appIdOf(auth.claimsIdentity), this.connectors) };
  }

  /**
   * `auth` (the adapter's own), now keeping the user token clients it creates for each turn (one per app id).
   * Everything else, the token checks included, stays botbuilder's own.
   */
  keepingTokenClients(auth: BotFrameworkAuthentication): BotFrameworkAuthentication {
    const create = auth.createUserTokenClient.bind(auth);
    auth.createUserTokenClient = (identity: ClaimsIdentity) => this.tokens.get(appIdOf(identity), () => create(identity));
    return auth;
  }
}
