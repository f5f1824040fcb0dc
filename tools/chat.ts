// `npm run chat`: a terminal Teams channel for a running local bot (like the Bot Framework Emulator, in a terminal).
import { errorMessage } from '../src/errors.js';
import { visible } from '../src/infra/visible.js';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { isatty } from 'node:tty';
import { request } from 'undici';
import { commandLine } from './args.js';
import { renderCard, type RenderedAction } from './renderCard.js';

const HELP = `billbridge chat — talk to a running bot as a Teams channel would.

Usage: npm run chat -- [--url http://localhost:3978] [--personal] [--user "Dana Lee"] [--no-color]

Type a command (e.g. "help", "bills due") and press Enter. In a channel it is sent as "@billbridge <text>".
  /click N     press button N of the last card
  /personal    switch to a personal chat;  /channel  back to the channel
  /quit        leave (Ctrl-D works too)`;

const { values } = commandLine('billbridge chat', HELP, {
  url: { type: 'string', default: process.env.BILLBRIDGE_URL ?? `http://localhost:${process.env.PORT ?? 3978}` },
  personal: { type: 'boolean', default: false },
  user: { type: 'string', default: 'Dana Lee' },
  'no-color': { type: 'boolean', default: false },
});
const baseUrl = String(values.url);

const color = !values['no-color'] && isatty(process.stdout.fd);
const dim = (s: string) => (color ? `\x1b[2m${s}\x1b[22m` : s);
const botUrl = `${baseUrl.replace(/\/+$/, '')}/api/messages`;
const tenant = '00000000-0000-4000-8000-00000000c0de';
const user = { id: '29:chat-user', name: String(values.user), aadObjectId: '00000000-0000-4000-8000-0000000c4a70' };
const bot = { id: '28:billbridge', name: 'billbridge' };
const team = { id: '19:chat-team@thread.tacv2', name: 'Finance' };
const channel = { id: '19:chat-channel@thread.tacv2', name: 'General' };
let personal = values.personal === true;
let lastActions: RenderedAction[] = [];
let lastCard: { activityId: string; conversationId: string } | undefined;

/** A JSON object from the bot: any field may be missing or of another type. */
type Json = Partial<Record<string, unknown>>;
const isJson = (x: unknown): x is Json => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Prints a card, numbering its buttons for /click. */
function showCard(card: unknown): void {
  const r = renderCard(card, { color });
  console.log(r.text);
  lastActions = r.actions;
}

function show(body: unknown): void {
  const activity = isJson(body) ? body : {};
  if (activity.type === 'typing') {
    console.log(dim('billbridge is typing…'));
    return;
  }
  if (typeof activity.text === 'string' && activity.text) console.log(visible(activity.text, { newlines: true }));
  for (const att of Array.isArray(activity.attachments) ? (activity.attachments as unknown[]) : []) {
    if (isJson(att) && att.contentType === 'application/vnd.microsoft.card.adaptive') showCard(att.content);
  }
}

/** The request's JSON body; rejects when it is not JSON (or the request breaks off). */
async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  return raw ? JSON.parse(raw) : {};
}

// The bot answers on the Bot Connector REST routes at the serviceUrl we give it.
function answer(req: IncomingMessage, res: ServerResponse, body: unknown): void {
  const path = new URL(req.url ?? '/', 'http://x').pathname.split('/').filter(Boolean).map(decodeURIComponent);
  const json = (status: number, payload: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(payload));
  };
  if (path[0] === 'v3' && path[1] === 'conversations' && path[3] === 'activities') {
    const id = (req.method === 'PUT' ? path[4] : undefined) ?? `chat-${randomUUID()}`;
    if (req.method === 'PUT') console.log(dim('(card updated)'));
    if (req.method === 'POST' || req.method === 'PUT') {
      process.stdout.write('\n');
      show(body);
      if (isJson(body) && body.type === 'message') lastCard = { activityId: id, conversationId: path[2] ?? '' };
    }
    return json(200, { id });
  }
  if (path[0] === 'v3' && path[1] === 'teams')
    return json(200, { id: team.id, name: team.name, aadGroupId: '00000000-0000-4000-8000-0000000000a1' });
  if (path[0] === 'v3' && path[1] === 'conversations' && (path[3] === 'members' || path[3] === 'pagedmembers')) {
    return json(200, {
      ...user,
      givenName: 'Dana',
      surname: 'Lee',
      email: 'dana@example.com',
      userPrincipalName: 'dana@example.com',
      tenantId: tenant,
      userRole: 'user',
    });
  }
  return json(404, { error: { code: 'NotFound', message: 'not supported by the chat client' } });
}

const connector = createServer((req, res) => {
  void readBody(req)
    .then((body) => answer(req, res, body))
    .catch((err: unknown) => {
      // A body that is not JSON gets a 400 and the client keeps serving; a failure after the answer started just ends it.
      if (res.headersSent) return res.end();
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'BadArgument', message: `unreadable request body: ${errorMessage(err)}` } }));
    });
});

function baseActivity(serviceUrl: string) {
  const id = randomUUID();
  const conversation = personal
    ? { id: `a:chat-personal-${user.aadObjectId}`, conversationType: 'personal', tenantId: tenant }
    : { id: `${channel.id};messageid=${id}`, conversationType: 'channel', isGroup: true, tenantId: tenant };
  return {
    id,
    timestamp: new Date().toISOString(),
    channelId: 'msteams',
    serviceUrl,
    from: user,
    recipient: bot,
    conversation,
    locale: 'en-US',
    channelData: personal
      ? { tenant: { id: tenant } }
      : { teamsChannelId: channel.id, teamsTeamId: team.id, channel, team, tenant: { id: tenant } },
  };
}

async function postActivity(activity: object): Promise<{ status: number; body: unknown }> {
  const res = await request(botUrl, { method: 'POST', body: JSON.stringify(activity), headers: { 'content-type': 'application/json' } });
  const text = await res.body.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  return { status: res.statusCode, body };
}

async function sendText(text: string, serviceUrl: string): Promise<void> {
  const activity: Record<string, unknown> = { ...baseActivity(serviceUrl), type: 'message', textFormat: 'plain' };
  if (personal) activity.text = text;
  else {
    activity.text = `<at>${bot.name}</at> ${text}`;
    activity.entities = [{ type: 'mention', mentioned: bot, text: `<at>${bot.name}</at>` }];
  }
  const res = await postActivity(activity);
  if (res.status >= 300)
    console.log(visible(`bot answered HTTP ${res.status}: ${typeof res.body === 'string' ? res.body : JSON.stringify(res.body)}`));
}

async function click(n: number, serviceUrl: string): Promise<void> {
  const action = lastActions.find((a) => a.n === n);
  if (!action) {
    console.log(`No button ${n} on the last card.`);
    return;
  }
  if (action.type === 'Action.OpenUrl') {
    console.log(visible(`Open: ${String(action.data)}`));
    return;
  }
  const base = baseActivity(serviceUrl);
  if (lastCard) base.conversation.id = lastCard.conversationId;
  if (action.type === 'Action.Execute') {
    const res = await postActivity({
      ...base,
      type: 'invoke',
      name: 'adaptiveCard/action',
      replyToId: lastCard?.activityId,
      value: { action: { type: 'Action.Execute', verb: action.verb, data: action.data }, trigger: 'manual' },
    });
    if (res.status !== 200) {
      console.log(`bot answered HTTP ${res.status}`);
      return;
    }
    const reply = isJson(res.body) ? res.body : {};
    const value = reply.value;
    if (reply.type === 'application/vnd.microsoft.card.adaptive' && value) {
      console.log(dim('(card updated)'));
      showCard(value);
    } else if (typeof value === 'string') console.log(visible(value, { newlines: true }));
    return;
  }
  await postActivity({ ...base, type: 'message', replyToId: lastCard?.activityId, value: action.data });
}

async function main(): Promise<void> {
  await new Promise<void>((resolve) => connector.listen(0, '127.0.0.1', () => resolve()));
  const serviceUrl = `http://127.0.0.1:${(connector.address() as AddressInfo).port}/`;
  try {
    const health = await request(`${baseUrl}/healthz`);
    await health.body.text();
  } catch {
    console.error(`Cannot reach the bot at ${baseUrl}. Start it first with: npm start`);
    process.exit(1);
  }
  const interactive = isatty(process.stdin.fd);
  if (interactive)
    console.log(
      `Connected to ${botUrl} as ${user.name} in ${personal ? 'a personal chat' : `#${channel.name} of ${team.name}`}. Type "help", or /quit.`,
    );
  const rl = createInterface({ input: process.stdin, output: process.stdout, prompt: interactive ? '> ' : '', terminal: interactive });
  rl.prompt();
  for await (const raw of rl) {
    const line = raw.trim();
    try {
      if (line === '/quit' || line === '/exit') break;
      else if (line === '/personal') personal = true;
      else if (line === '/channel') personal = false;
      else if (/^\/click\s+\d+$/.test(line)) await click(Number(line.split(/\s+/)[1]), serviceUrl);
      else if (line.startsWith('/')) console.log(HELP);
      else if (line !== '') await sendText(line, serviceUrl);
    } catch (err) {
      console.error(`Could not reach the bot: ${errorMessage(err)}`);
    }
    rl.prompt();
  }
  rl.close();
  connector.close();
  connector.closeAllConnections();
}

void main();
