// The Bot Framework adapter: CloudAdapter with botbuilder's own JWT checks, and the one onTurnError.
import { CloudAdapter, ConfigurationBotFrameworkAuthentication, type ConfigurationBotFrameworkAuthenticationOptions } from 'botbuilder';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { errorMessage } from '../errors.js';
import { cardActivity, correlationIdOf } from '../bot/bot.js';
import { errorReply } from '../bot/cards/errorCards.js';

export function botAuthOptions(config: Config): ConfigurationBotFrameworkAuthenticationOptions {
  if (config.bot.appId === '') {
    // Local mode: botbuilder treats an empty app id as "authentication disabled" only for MultiTenant.
    return { MicrosoftAppId: '', MicrosoftAppPassword: '', MicrosoftAppType: 'MultiTenant', ...config.bot.overrides } as ConfigurationBotFrameworkAuthenticationOptions;
  }
  return {
    MicrosoftAppId: config.bot.appId,
    MicrosoftAppPassword: config.bot.appPassword,
    MicrosoftAppType: config.bot.appType,
    MicrosoftAppTenantId: config.bot.tenantId,
    ...config.bot.overrides,
  } as ConfigurationBotFrameworkAuthenticationOptions;
}

export function createAdapter(config: Config, log: Logger): CloudAdapter {
  if (config.bot.appId === '') {
    log.warn(
      'LOCAL MODE: MicrosoftAppId is empty, so inbound Bot Framework authentication is OFF and anyone who can reach /api/messages can talk to the bot. Never expose this instance.',
    );
  }
  const auth = new ConfigurationBotFrameworkAuthentication(botAuthOptions(config));
  const adapter = new CloudAdapter(auth);
  adapter.onTurnError = async (context, error) => {
    const correlationId = correlationIdOf(context);
    log.error(
      { correlationId, err: errorMessage(error), errName: error instanceof Error ? error.name : typeof error, stack: error instanceof Error ? error.stack : undefined, activityType: context.activity?.type },
      'unhandled error in turn',
    );
    if (context.activity?.type === 'message' && !context.responded) {
      try {
        await context.sendActivity(cardActivity(errorReply(error, { correlationId })));
      } catch (sendErr) {
        log.warn({ correlationId, err: errorMessage(sendErr) }, 'could not send the error card');
      }
    }
  };
  return adapter;
}
