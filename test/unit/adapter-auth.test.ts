// How the adapter configures botbuilder's auth, classifies its failures and checks an activity's envelope.
import { describe, expect, it } from 'vitest';
import { AuthenticationError } from 'botframework-connector';
import { activityEnvelopeProblem, botAuthOptions, classifyAuthError } from '../../src/teams/adapter.js';
import { loadConfig } from '../../src/config.js';

const TENANT = 'aaaaaaaa-0000-4000-8000-000000000001';
const AUTHED = {
  STATE_DIR: './.data',
  MicrosoftAppId: '3f2504e0-4f89-41d3-9a0c-0305e82c3301',
  MicrosoftAppPassword: 'pw-value-123',
  MicrosoftAppTenantId: TENANT,
  ALLOWED_TENANT_IDS: TENANT,
};

describe('botAuthOptions', () => {
  it('without overrides passes only the app registration, so botbuilder uses the public cloud', () => {
    const opts = botAuthOptions(loadConfig(AUTHED)) as Record<string, unknown>;
    expect(opts).toEqual({
      MicrosoftAppId: AUTHED.MicrosoftAppId,
      MicrosoftAppPassword: 'pw-value-123',
      MicrosoftAppType: 'SingleTenant',
      MicrosoftAppTenantId: TENANT,
    });
  });

  it('overriding the OpenID metadata URL alone keeps every other setting at its public-cloud value', () => {
    const opts = botAuthOptions(
      loadConfig({ ...AUTHED, ToBotFromChannelOpenIdMetadataUrl: 'http://127.0.0.1:1/v1/.well-known/openidconfiguration' }),
    ) as Record<string, unknown>;
    expect(opts).toMatchObject({
      ToBotFromChannelOpenIdMetadataUrl: 'http://127.0.0.1:1/v1/.well-known/openidconfiguration',
      ToBotFromChannelTokenIssuer: 'https://api.botframework.com',
      ToChannelFromBotLoginUrl: 'https://login.microsoftonline.com/botframework.com',
      ToChannelFromBotOAuthScope: 'https://api.botframework.com',
      ToBotFromEmulatorOpenIdMetadataUrl: 'https://login.microsoftonline.com/common/v2.0/.well-known/openid-configuration',
      OAuthUrl: 'https://api.botframework.com',
      CallerId: 'urn:botframework:azure',
    });
  });

  it('local mode stays MultiTenant with an empty app id (botbuilder\'s "authentication disabled")', () => {
    expect(botAuthOptions(loadConfig({ STATE_DIR: './.data' }))).toMatchObject({ MicrosoftAppId: '', MicrosoftAppType: 'MultiTenant' });
  });
});

describe('classifyAuthError', () => {
  it('answers every refusal 401, including jsonwebtoken errors botbuilder lets through', () => {
    for (const name of ['JsonWebTokenError', 'NotBeforeError', 'TokenExpiredError']) {
      expect(classifyAuthError(Object.assign(new Error('invalid signature'), { name })).status).toBe(401);
    }
    expect(classifyAuthError(new AuthenticationError('Unauthorized. Invalid AppId passed on token: x', 401)).status).toBe(401);
  });

  it('answers 503 when the OpenID metadata or keys cannot be loaded', () => {
    expect(classifyAuthError(new AuthenticationError('Failed to load openID config: 502', 500)).status).toBe(503);
    expect(
      classifyAuthError(Object.assign(new Error('request to https://login.botframework.com failed'), { name: 'FetchError' })).status,
    ).toBe(503);
  });
});

describe('activityEnvelopeProblem', () => {
  const ok = {
    type: 'message',
    channelId: 'msteams',
    serviceUrl: 'https://smba.trafficmanager.net/amer/',
    conversation: { id: '19:abc@thread.tacv2' },
    from: { id: '29:x' },
    id: '1',
  };
  it('accepts a Teams activity', () => {
    expect(activityEnvelopeProblem(ok)).toBeUndefined();
  });
  it.each([
    ['a numeric serviceUrl', { serviceUrl: 42 }],
    ['a non-http serviceUrl', { serviceUrl: 'file:///etc/passwd' }],
    ['no conversation', { conversation: undefined }],
    ['a conversation without id', { conversation: {} }],
    ['an oversized activity id', { id: 'x'.repeat(5000) }],
    ['an oversized sender name', { from: { id: '29:x', name: 'n'.repeat(1000) } }],
    ['an invoke without a name', { type: 'invoke' }],
    ['entities that are not a list', { entities: { type: 'mention' } }],
    ['a non-string channelId', { channelId: ['msteams'] }],
  ])('refuses %s', (_what, change) => {
    expect(activityEnvelopeProblem({ ...ok, ...change })).toEqual(expect.any(String));
  });
});
