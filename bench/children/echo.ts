// Bench child: the baseline — a minimal botbuilder echo bot (BotBuilder-Samples 02.echo-bot: CloudAdapter +
// ActivityHandler answering "Echo: <text>") on the same restify 11 server set-up and body parser as billbridge.
import restify from 'restify';
import { ActivityHandler, CloudAdapter, ConfigurationBotFrameworkAuthentication, MessageFactory } from 'botbuilder';
import { MESSAGE_BODY_LIMIT, safeReviver } from '../../src/http/server.js';
import { ready, residentSet, serve } from './ipc.js';

class EchoBot extends ActivityHandler {
  constructor() {
    super();
    this.onMessage(async (context, next) => {
      const replyText = `Echo: ${context.activity.text}`;
      await context.sendActivity(MessageFactory.text(replyText, replyText));
      await next();
    });
  }
}

// Local mode, as billbridge runs in the bench: no app id, so no token checks on either side.
const auth = new ConfigurationBotFrameworkAuthentication({
  MicrosoftAppId: '',
  MicrosoftAppPassword: '',
  MicrosoftAppType: 'MultiTenant',
});
const adapter = new CloudAdapter(auth);
adapter.onTurnError = async (context, error) => {
  process.stderr.write(`echo bot turn error: ${error instanceof Error ? error.message : String(error)}\n`);
  await context.sendActivity('The bot encountered an error.');
};
const bot = new EchoBot();

const server = restify.createServer({ name: 'echo', handleUncaughtExceptions: false, ignoreTrailingSlash: true });
const messageBody = restify.plugins.bodyParser({
  maxBodySize: MESSAGE_BODY_LIMIT,
  mapParams: false,
  reviver: safeReviver,
});
server.post('/api/messages', messageBody, async (req: restify.Request, res: restify.Response) => {
  await adapter.process(req, res, (context) => bot.run(context));
});

// restify's listen() is typed as returning `any`; only its callback matters here.
await new Promise<void>((resolve) => {
  server.listen(0, '127.0.0.1', () => resolve());
});
const addr = server.address();

serve({ stats: () => residentSet() }, async () => {
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.server.closeIdleConnections();
  });
});

ready({ url: `http://127.0.0.1:${addr.port}`, pid: process.pid });
