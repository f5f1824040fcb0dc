// Card clicks are turns like any other: they count against the clicker's rate, act only on the message that carries
// the card, run only with the clicker's own authority, and a button that opens another view answers in a new reply.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import { channelMessage, executeInvoke, type Who } from '../harness/activities.js';
import { ConnectorStandIn, type ConnectorCall } from '../harness/connector.js';
import { sandboxControlOk } from '../harness/sandbox.js';
import { REFRESH_VERB } from '../../src/features/notifications/cards.js';
import { APPROVAL_VERBS } from '../../src/features/approvals/cards.js';

const PER_MINUTE = 4;
/** A billbridge admin (ADMIN_AAD_OBJECT_IDS): the person whose authority a stolen Try again would borrow. */
const ADMIN: Required<Who> = { id: '29:user-admin', name: 'Alex Admin', aadObjectId: '66666666-0000-4000-8000-00000000ad01' };
let bot: TestBot;

beforeAll(async () => {
  bot = await startBot({
    env: {
      USER_COMMANDS_PER_MINUTE: String(PER_MINUTE),
      SECRETS_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'info',
      ADMIN_AAD_OBJECT_IDS: ADMIN.aadObjectId,
    },
  });
  bot.connector.script((call) => {
    if ((call.kind !== 'reply' && call.kind !== 'send') || call.body?.type !== 'message') return undefined;
    const id = `msg-${++sent}`;
    sentIds.set(call, id);
    return { status: 200, body: { id } };
  });
});
afterAll(async () => {
  await bot.close();
});

type Card = ReturnType<typeof ConnectorStandIn.card>;
type Base = ReturnType<typeof channelMessage>;
let people = 0;
/** A fresh person (their own rate budget). */
function person(name: string): Required<Who> {
  people++;
  const n = people.toString(16).padStart(4, '0');
  return { id: `29:user-${name.toLowerCase()}-${n}`, name, aadObjectId: `5555${n}-0000-4000-8000-00000000${n}` };
}

const bills = () => bot.app.sandbox!.stats().requests;

/** A person types a command in a new thread; resolves with the bot's reply (the card message) and its thread. */
async function say(who: Who, text: string): Promise<{ reply: ConnectorCall; card: Card; base: Base }> {
  const res = await bot.say(text, { from: who });
  expect(res.status).toBe(200);
  const conv = res.activity.conversation.id;
  const [reply] = await bot.connector.waitForMessages(1, conv);
  return { reply: reply!, card: ConnectorStandIn.card(reply!), base: res.activity };
}

/** The id the connector gave each delivered message (what Teams puts in replyToId when its card is clicked). */
const sentIds = new Map<ConnectorCall, string>();
let sent = 0;
const messageId = (reply: ConnectorCall): string => sentIds.get(reply)!;

/** Bot messages and card edits in one conversation thread since `from` calls. */
const since = (from: number, kind: ConnectorCall['kind']) =>
  bot.connector.calls.slice(from).filter((c) => c.kind === kind && c.body?.type !== 'typing');

function button(card: Card, title: string): Record<string, unknown> {
  // Buttons too many for one row on a phone are stacked, each in an ActionSet at the end of the body.
  const all = [...(card.actions ?? []), ...(card.body ?? []).filter((e) => e.type === 'ActionSet').flatMap((e) => e.actions ?? [])];
  const found = JSON.stringify(all);
  const action = all.find((a) => a.title === title);
  expect(action, `no "${title}" button in ${found.slice(0, 400)}`).toBeDefined();
  return action!.data!;
}

/** Clicks a button through Universal Actions (adaptiveCard/action invoke); resolves with the invoke answer. */
async function execute(who: Who, base: Base, data: Record<string, unknown>, replyToId?: string) {
  const res = await bot.send(executeInvoke(data, base, { from: who, replyToId }));
  expect(res.status).toBe(200);
  return res.json;
}

/** Clicks a button through the Action.Submit fallback (a message activity carrying value). */
async function submit(who: Who, base: Base, data: Record<string, unknown>, replyToId?: string): Promise<void> {
  const activity = {
    ...channelMessage('', {
      serviceUrl: bot.connector.url,
      from: who,
      threadId: base.conversation.id.split('messageid=')[1],
      noMention: true,
      value: data,
      replyToId,
    }),
  };
  const res = await bot.send(activity);
  expect(res.status).toBe(200);
}

const text = (v: unknown) => JSON.stringify(v);

const nextCall = () => bot.connector.calls.length;

describe("card clicks count against the person's rate", () => {
  it('a person clicking Refresh, Show more, a notification Refresh and Approve past USER_COMMANDS_PER_MINUTE is told to wait, and BILL sees no further calls', async () => {
    const dana = person('Dana');
    const list = await say(dana, 'bills due 60');
    const more = button(list.card, 'Show more');
    const refresh = button(list.card, 'Refresh');
    const bill = bot.app.sandbox!.org.bills.all()[0]!;
    // Within the limit the clicks work (the typed command was the first of PER_MINUTE).
    for (let i = 1; i < PER_MINUTE; i++) expect(text(await execute(dana, list.base, refresh))).not.toContain('One moment');
    const before = bills();
    const clicks: Array<Record<string, unknown>> = [
      refresh,
      more,
      { verb: REFRESH_VERB, entity: 'bill', id: bill.id, type: 'bill.updated' },
      { verb: APPROVAL_VERBS.approve, card: 'c1', bill: bill.id, sig: 'x'.repeat(43) },
      { verb: APPROVAL_VERBS.view, card: 'c1', sig: 'x'.repeat(43) },
    ];
    for (const data of clicks) {
      const answer = await execute(dana, list.base, data);
      expect(text(answer), `click ${text(data)}`).toContain('One moment, please');
    }
    // The Action.Submit fallback is held to the same rate.
    const from = nextCall();
    await submit(dana, list.base, { verb: REFRESH_VERB, entity: 'bill', id: bill.id, type: 'bill.updated' }, messageId(list.reply));
    const answered = await bot.connector.waitFor((calls) =>
      calls.slice(from).find((c) => c.body?.type === 'message' && (c.kind === 'update' || c.kind === 'reply')),
    );
    expect(text(answered.body)).toContain('One moment, please');
    expect(bills()).toBe(before);
  });

  it("a notification card's Refresh clicked twice within the cache lifetime reads BILL only the first time", async () => {
    const omar = person('Omar');
    const bill = bot.app.sandbox!.org.bills.all().find((b) => !b.archived && b.invoice?.invoiceNumber)!;
    const base = channelMessage('', { serviceUrl: bot.connector.url, from: omar });
    const data = { verb: REFRESH_VERB, entity: 'bill', id: bill.id, type: 'bill.updated' };
    const before = bills();
    const first = await execute(omar, base, data);
    expect(text(first?.value)).toContain(bill.invoice!.invoiceNumber!);
    const afterFirst = bills();
    expect(afterFirst).toBeGreaterThan(before);
    const second = await execute(omar, base, data);
    expect(text(second?.value)).toContain(bill.invoice!.invoiceNumber!);
    expect(bills()).toBe(afterFirst);
  });
});

describe("a notification card's Refresh", () => {
  it('is answered from what BILL said until BILL says the record changed; the posted card is then edited in place with the news', async () => {
    const AP = '19:channel-refresh@thread.tacv2';
    const setup = await bot.say(`webhooks setup ${bot.url}/api/bill/webhooks`, { from: ADMIN, channel: AP });
    await bot.connector.waitForMessages(1, setup.activity.conversation.id);
    const sub = await bot.say('subscribe bills', { from: ADMIN, channel: AP });
    await bot.connector.waitForMessages(1, sub.activity.conversation.id);
    const bill = [...bot.app.sandbox!.org.bills.all()]
      .reverse()
      .find((b) => b.paymentStatus === 'UNPAID' && !b.archived && b.invoice?.invoiceNumber && (b.dueAmount ?? b.amount) > 100)!;
    const data = { verb: REFRESH_VERB, entity: 'bill', id: bill.id, type: 'bill.updated' };
    const reader = person('Rita');
    const base = channelMessage('', { serviceUrl: bot.connector.url, from: reader, channel: AP });
    let before = bills();
    expect(text((await execute(reader, base, data))?.value)).not.toContain('is paid');
    expect(bills()).toBeGreaterThan(before);
    before = bills();
    await execute(reader, base, data);
    expect(bills()).toBe(before);

    // BILL pays the bill and says so by webhook: the channel gets a card, and the kept answer is dropped.
    await sandboxControlOk(bot.app.sandbox!.url, 'POST', `/bills/${bill.id}/pay`, {});
    await sandboxControlOk(bot.app.sandbox!.url, 'POST', '/webhooks/flush');
    await bot.app.notify.worker.drain();
    const [post] = await bot.connector.waitForMessages(1, AP);
    const refresh = button(ConnectorStandIn.card(post!), 'Refresh');
    // An older client clicks the posted card's Refresh (Action.Submit from the post's thread).
    before = bills();
    const from = nextCall();
    const click = channelMessage('', {
      serviceUrl: bot.connector.url,
      from: reader,
      channel: AP,
      threadId: messageId(post!),
      noMention: true,
      value: refresh,
      replyToId: messageId(post!),
    });
    expect((await bot.send(click)).status).toBe(200);
    const edit = await bot.connector.waitFor((calls) => calls.slice(from).find((c) => c.kind === 'update'));
    expect(edit.activityId).toBe(messageId(post!));
    expect(text(ConnectorStandIn.card(edit))).toContain('is paid');
    expect(bills()).toBeGreaterThan(before);
  });
});

describe("Try again runs only the clicker's own command", () => {
  it("an admin pressing someone else's Try again does not run their command; its author's retry works", async () => {
    const ana = person('Ana');
    const admin = ADMIN;
    const bill = bot.app.sandbox!.org.bills.all().at(-1)!;
    await sandboxControlOk(bot.app.sandbox!.url, 'POST', '/faults', { kind: 'serverError', path: '/v3/bills', count: 20 });
    const failed = await say(ana, `bill ${bill.id}`);
    await sandboxControlOk(bot.app.sandbox!.url, 'DELETE', '/faults');
    const retry = button(failed.card, 'Try again');
    const before = bills();
    const byAdmin = await execute(admin, failed.base, retry, messageId(failed.reply));
    expect(text(byAdmin)).toContain('Only the person who sent this command can retry it');
    expect(bills()).toBe(before);
    // The Action.Submit fallback: no command runs, the error card stays as it is.
    const from = nextCall();
    await submit(admin, failed.base, retry, messageId(failed.reply));
    const answer = await bot.connector.waitFor((calls) => calls.slice(from).find((c) => c.body?.type === 'message'));
    expect(answer.kind).toBe('reply');
    expect(text(answer.body)).toContain('Only the person who sent this command can retry it');
    expect(bills()).toBe(before);
    // Ana's own retry runs her command.
    const byAna = await execute(ana, failed.base, retry, messageId(failed.reply));
    expect(text(byAna)).not.toContain('Only the person');
    expect(text(byAna?.value)).toContain(bill.invoice!.invoiceNumber!);
    expect(bills()).toBeGreaterThan(before);
  });
});

describe('a card action acts only on the message that carries it', () => {
  it('a crafted Action.Submit naming another bot message in replyToId does not overwrite that message', async () => {
    const eve = person('Eve');
    const target = await say(eve, 'help');
    const list = await say(eve, 'bills overdue');
    const refresh = button(list.card, 'Refresh');
    const from = nextCall();
    await submit(eve, list.base, refresh, messageId(target.reply));
    await bot.connector.waitFor((calls) => calls.slice(from).find((c) => c.body?.type === 'message'));
    expect(since(from, 'update').filter((c) => c.activityId === messageId(target.reply))).toEqual([]);
  });

  it('a message id in the card data is never used: the update goes to the message Teams says was clicked', async () => {
    const eve = person('Eve');
    const target = await say(eve, 'help');
    const list = await say(eve, 'bills overdue');
    const refresh = button(list.card, 'Refresh');
    const crafted = {
      ...refresh,
      replyToId: messageId(target.reply),
      messageId: messageId(target.reply),
      activityId: messageId(target.reply),
    };
    const from = nextCall();
    await submit(eve, list.base, crafted, messageId(list.reply));
    await bot.connector.waitFor((calls) => calls.slice(from).find((c) => c.body?.type === 'message'));
    expect(since(from, 'update').map((c) => c.activityId)).not.toContain(messageId(target.reply));
    await execute(eve, list.base, crafted, messageId(list.reply));
    expect(since(from, 'update').map((c) => c.activityId)).not.toContain(messageId(target.reply));
  });

  it('a Refresh that fails for the clicker leaves the card everyone sees as it was and tells the clicker alone', async () => {
    const eve = person('Eve');
    const mo = person('Mo');
    const list = await say(eve, 'bills overdue');
    await sandboxControlOk(bot.app.sandbox!.url, 'POST', '/faults', { kind: 'serverError', path: '/v3/bills', count: 20 });
    const from = nextCall();
    try {
      await submit(mo, list.base, button(list.card, 'Refresh'), messageId(list.reply));
      const answer = await bot.connector.waitFor((calls) => calls.slice(from).find((c) => c.body?.type === 'message'));
      expect(answer.kind).toBe('reply');
      expect(text(answer.body)).toContain('Try again');
      expect(since(from, 'update')).toEqual([]);
    } finally {
      await sandboxControlOk(bot.app.sandbox!.url, 'DELETE', '/faults');
    }
  });

  it('Refresh clicked on a card updates that card in place', async () => {
    const eve = person('Eve');
    const list = await say(eve, 'bills overdue');
    const from = nextCall();
    await submit(eve, list.base, button(list.card, 'Refresh'), messageId(list.reply));
    const updated = await bot.connector.waitFor((calls) => calls.slice(from).find((c) => c.kind === 'update'));
    expect(updated.activityId).toBe(messageId(list.reply));
    expect(since(from, 'reply')).toEqual([]);
  });
});

describe('a button that opens another view answers in a new reply', () => {
  it('"Show overdue bills" leaves the bills-due card as it was and posts the overdue bills in the same thread', async () => {
    const kim = person('Kim');
    const due = await say(kim, 'bills due');
    const show = button(due.card, 'Show overdue bills');
    // Universal Actions: the clicked card is not replaced; the overdue list arrives as a reply in the thread.
    let from = nextCall();
    const answer = await execute(kim, due.base, show, messageId(due.reply));
    expect(answer?.type).not.toBe('application/vnd.microsoft.card.adaptive');
    let posted = await bot.connector.waitFor((calls) => calls.slice(from).find((c) => c.kind === 'reply' && c.body?.type === 'message'));
    expect(posted.conversationId).toBe(due.base.conversation.id);
    expect(text(ConnectorStandIn.card(posted))).toContain('verdue');
    expect(since(from, 'update')).toEqual([]);
    // Action.Submit fallback: the same.
    from = nextCall();
    await submit(kim, due.base, show, messageId(due.reply));
    posted = await bot.connector.waitFor((calls) => calls.slice(from).find((c) => c.kind === 'reply' && c.body?.type === 'message'));
    expect(posted.conversationId).toBe(due.base.conversation.id);
    expect(text(ConnectorStandIn.card(posted))).toContain('verdue');
    expect(since(from, 'update')).toEqual([]);
  });
});

describe('a card action the bot cannot act on is answered with an invoke error', () => {
  it('an Action.Execute without a verb gets BadRequest, and a universal action of another type gets NotSupported', async () => {
    const dana = person('Dana');
    const base = channelMessage('', { serviceUrl: bot.connector.url, from: dana });
    const noVerb = executeInvoke({ page: 1 }, base, { from: dana });
    expect((await bot.send(noVerb)).json).toMatchObject({
      statusCode: 400,
      type: 'application/vnd.microsoft.error',
      value: { code: 'BadRequest', message: 'Missing verb' },
    });
    const submit = executeInvoke({ verb: 'run', command: 'help' }, base, { from: dana });
    submit.value.action.type = 'Action.Submit';
    expect((await bot.send(submit)).json).toMatchObject({
      statusCode: 400,
      value: { code: 'NotSupported', message: "The action 'Action.Submit' is not supported." },
    });
  });
});

describe('a click whose answer Teams refuses to post', () => {
  it('"Show overdue bills" through Universal Actions while Teams refuses new replies: the clicker is told, and the turn does not fail', async () => {
    const own = await startBot({ env: { USER_COMMANDS_PER_MINUTE: '100' } });
    try {
      const res = await own.say('bills due');
      const thread = res.activity.conversation.id;
      const [due] = await own.connector.waitForMessages(1, thread);
      const card = ConnectorStandIn.card(due!);
      const actions = [...(card.actions ?? []), ...(card.body ?? []).filter((e) => e.type === 'ActionSet').flatMap((e) => e.actions ?? [])];
      const show = actions.find((a) => a.title === 'Show overdue bills')!.data!;
      own.connector.failSends(10, { status: 403, body: { error: { code: 'BotNotInConversationRoster', message: 'no' } } }, thread);
      const answer = await own.send(executeInvoke(show, res.activity));
      expect(answer.status).toBe(200);
      expect(answer.json).toMatchObject({ statusCode: 200, type: 'application/vnd.microsoft.activity.message' });
      expect(String((answer.json as { value: unknown }).value)).toMatch(/reference/i);
      expect(own.logs.records().filter((r) => r.msg === 'unhandled error in turn')).toEqual([]);
    } finally {
      await own.close();
    }
  });
});

describe('a typed command whose answer Teams refuses to post', () => {
  it('the refusal is a warning naming the reply, not an unhandled turn error, and no error card is tried', async () => {
    const own = await startBot();
    try {
      own.connector.failSends(10, { status: 403, body: { error: { code: 'BotNotInConversationRoster', message: 'no' } } });
      const res = await own.say('help');
      expect(res.status).toBe(200);
      const told = await own.logs.waitFor((r) => r.msg === 'the reply could not be posted' || r.msg === 'unhandled error in turn');
      expect(told).toMatchObject({ msg: 'the reply could not be posted', level: 'warn' });
      expect(own.logs.records().filter((r) => r.level === 'error' || r.level === 'fatal')).toEqual([]);
    } finally {
      await own.close();
    }
  });
});
