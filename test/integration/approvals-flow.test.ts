// Approving bills from Teams as the named BILL approver, end to end: the real bot over HTTP, the embedded BILL sandbox
// and the connector stand-in. Approvers link their own BILL sync token in a personal chat; a channel card shows
// buttons only to the approver; every click is re-checked and runs in the clicker's own BILL session.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bill } from '../../src/bill/types.js';
import { APPROVAL_VERBS, CONNECT_INPUTS } from '../../src/features/approvals/cards.js';
import { sandboxControlOk } from '../harness/sandbox.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { TENANT, channelMessage, executeInvoke, personalMessage, type Who } from '../harness/activities.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { checkCard, type CardJson } from '../harness/cards.js';
import { registerSecrets } from '../harness/secretScan.js';
import { NS } from '../../src/infra/state/types.js';

const PRIYA: Required<Who> = { id: '29:user-priya', name: 'Priya Raman', aadObjectId: '22222222-0000-4000-8000-0000000000a1' };
const MARCUS: Required<Who> = { id: '29:user-marcus', name: 'Marcus Lee', aadObjectId: '33333333-0000-4000-8000-0000000000b2' };
const TOM: Required<Who> = { id: '29:user-tom', name: 'Tom Becker', aadObjectId: '44444444-0000-4000-8000-0000000000c3' };

let bot: TestBot;
const tokens: Array<{ name: string; value: string }> = [];
const billUser: Record<string, string> = {};

type Card = CardJson;
type Base = Parameters<typeof executeInvoke>[1];

const control = (method: string, path: string, body?: unknown) => sandboxControlOk(bot.app.sandbox!.url, method, path, body);

/** Every object of the card (depth first). */
function nodes(card: unknown): Card[] {
  const out: Card[] = [];
  const walk = (n: unknown) => {
    if (!n || typeof n !== 'object') return;
    if (Array.isArray(n)) {
      n.forEach(walk);
      return;
    }
    out.push(n as Card);
    Object.values(n).forEach(walk);
  };
  walk(card);
  return out;
}

const texts = (card: Card) =>
  nodes(card.body)
    .filter((n) => n.type === 'TextBlock')
    .map((n) =>
      String(n.text)
        .replace(/\\(.)/g, '$1')
        .replace(/\u2060/g, ''),
    ); // words as read: no escapes, no word joiners
const buttons = (card: Card, verb: string) => nodes(card).filter((n) => n.type === 'Action.Execute' && n.verb === verb);
const buttonFor = (card: Card, verb: string, billId: string) => buttons(card, verb).find((b) => b.data?.bill === billId)?.data;

function valid(card: Card): Card {
  const check = checkCard(card);
  expect(check.problems).toEqual([]);
  expect(check.bytes).toBeLessThan(40 * 1024);
  return card;
}

/** A message from a person in their personal chat; resolves with the bot's reply card. */
async function personal(who: Who, text: string): Promise<Card> {
  const activity = personalMessage(text, { serviceUrl: bot.connector.url, from: who });
  const before = bot.connector.messages(activity.conversation.id).length;
  await bot.send(activity);
  const msgs = await bot.connector.waitForMessages(before + 1, activity.conversation.id);
  return valid(ConnectorStandIn.card(msgs[before]!));
}

/** "@billbridge <text>" in the finance channel; resolves with the reply card and the thread's base activity. */
async function inChannel(who: Who, text: string): Promise<{ card: Card; base: ReturnType<typeof channelMessage> }> {
  const activity = channelMessage(text, { serviceUrl: bot.connector.url, from: who });
  const before = bot.connector.messages(activity.conversation.id).length;
  await bot.send(activity);
  const msgs = await bot.connector.waitForMessages(before + 1, activity.conversation.id);
  return { card: valid(ConnectorStandIn.card(msgs[before]!)), base: activity };
}

/** A card click (Action.Execute invoke) or Teams' automatic refresh; resolves with the card the clicker gets back. */
async function click(
  base: Base,
  data: Record<string, unknown>,
  who: Who,
  replyToId: string,
  trigger: 'manual' | 'automatic' = 'manual',
): Promise<Card> {
  const invoke = executeInvoke(data, base, { from: who, replyToId });
  invoke.value.trigger = trigger;
  const res = await bot.send(invoke);
  expect(res.status).toBe(200);
  expect(res.json?.type).toBe('application/vnd.microsoft.card.adaptive');
  return valid(res.json?.value as Card);
}

/** The connector gives the bot's next message this id (what Teams names in replyToId when its card is clicked). */
function nextMessageId(id: string): void {
  const stop = bot.connector.script((call) => {
    if ((call.kind !== 'reply' && call.kind !== 'send') || call.body?.type !== 'message') return undefined;
    stop();
    return { status: 200, body: { id } };
  });
}

const edits = (activityId: string) =>
  bot.connector.calls.filter((c) => c.kind === 'update' && c.activityId === activityId && c.status < 300);
const actionCalls = () => bot.app.sandbox!.requests().filter((r) => r.route === 'POST /v3/bill-approvals/actions').length;
const decisions = () => bot.app.sandbox!.org.approvalDecisions;
const sandboxBill = (id: string): Bill => structuredClone(bot.app.sandbox!.org.bills.get(id)!);

/** The person makes a sync token in BILL and links it in their personal chat through the connect card. */
async function link(who: Required<Who>, firstName: string): Promise<void> {
  const user = bot.app.sandbox!.org.users.all().find((u) => u.firstName === firstName)!;
  billUser[who.id] = user.id;
  const token = await control('POST', `/users/${user.id}/sync-tokens`, {});
  const name = token?.name;
  const value = token?.value;
  if (typeof name !== 'string' || typeof value !== 'string') throw new Error(`no sync token in ${JSON.stringify(token)}`);
  tokens.push({ name, value });
  const form = await personal(who, 'connect');
  expect(buttons(form, APPROVAL_VERBS.connect)).toHaveLength(1);
  const done = await click(
    personalMessage('', { serviceUrl: bot.connector.url, from: who }),
    { verb: APPROVAL_VERBS.connect, [CONNECT_INPUTS.tokenName]: name, [CONNECT_INPUTS.tokenValue]: value },
    who,
    `connect-${who.id}`,
  );
  expect(texts(done)[0]).toBe('Connected to BILL');
}

/** An unpaid bill nobody approves yet, due before every other open bill, so it heads every approver's list. */
function freshBill(dueDate: string): Bill {
  const bill = bot.app
    .sandbox!.org.bills.all()
    .find((b) => !b.archived && b.paymentStatus === 'UNPAID' && b.approvalStatus === 'UNASSIGNED' && (b.approvers ?? []).length === 0)!;
  bill.dueDate = dueDate;
  bot.app.sandbox!.org.bills.put(bill);
  return bill;
}

beforeAll(async () => {
  bot = await startBot({ env: { SECRETS_KEY: randomBytes(32).toString('base64') } });
  registerSecrets(() => tokens.flatMap((t) => [t.value]));
  await link(PRIYA, 'Priya');
  await link(MARCUS, 'Marcus');
});
afterAll(async () => {
  await bot.close();
});

describe('linking a BILL identity', () => {
  it('shows masked inputs only in a personal chat; in a channel it says where to go and collects nothing', async () => {
    const form = await personal(TOM, 'connect');
    const inputs = nodes(form.body).filter((n) => n.type === 'Input.Text');
    expect(inputs.map((i) => [i.id, i.style])).toEqual([
      [CONNECT_INPUTS.tokenName, 'Password'],
      [CONNECT_INPUTS.tokenValue, 'Password'],
    ]);
    expect(texts(form).join(' ')).toContain('Settings › Apps › Tokens');

    const { card } = await inChannel(TOM, 'connect');
    expect(texts(card)[0]).toBe('Connect in a personal chat');
    expect(nodes(card).some((n) => String(n.type).startsWith('Input.'))).toBe(false);
    expect(buttons(card, APPROVAL_VERBS.connect)).toEqual([]);
    // A connect form submitted from a channel is refused and links nothing.
    const refused = await click(
      channelMessage('', { serviceUrl: bot.connector.url, from: TOM }),
      { verb: APPROVAL_VERBS.connect, [CONNECT_INPUTS.tokenName]: 'tom-token', [CONNECT_INPUTS.tokenValue]: 'tom-secret-value-123456' },
      TOM,
      'x',
    );
    expect(texts(refused)[0]).toBe('Connect in a personal chat');
    expect(await bot.app.approvals!.links.all({ tenantId: TENANT, aadObjectId: TOM.aadObjectId })).toEqual([]);
  });

  it('refuses a token BILL does not accept, without echoing it, and links nothing', async () => {
    const wrong = { name: 'tom-approvals', value: `not-a-real-token-${randomBytes(6).toString('hex')}` };
    tokens.push(wrong);
    const card = await click(
      personalMessage('', { serviceUrl: bot.connector.url, from: TOM }),
      { verb: APPROVAL_VERBS.connect, [CONNECT_INPUTS.tokenName]: wrong.name, [CONNECT_INPUTS.tokenValue]: wrong.value },
      TOM,
      'connect-tom',
    );
    expect(texts(card).join(' ')).toContain('BILL did not accept that token');
    expect(JSON.stringify(card)).not.toContain(wrong.value);
    expect(JSON.stringify(card)).not.toContain(wrong.name);
    expect(await bot.app.approvals!.links.all({ tenantId: TENANT, aadObjectId: TOM.aadObjectId })).toEqual([]);
  });

  it('stores nothing readable: no token, name or identity in any file, and never a token in a log line or audit record', async () => {
    const files = readdirSync(bot.stateDir).filter((f) => statSync(join(bot.stateDir, f)).isFile());
    const disk = files.map((f) => readFileSync(join(bot.stateDir, f), 'utf8')).join('\n');
    const links = JSON.stringify(await bot.app.state.entries(NS.userLinks));
    for (const t of tokens) {
      expect(disk).not.toContain(t.value);
      expect(disk).not.toContain(t.name);
      expect(bot.logs.text()).not.toContain(t.value);
      expect(bot.logs.text()).not.toContain(t.name);
    }
    for (const plain of [
      PRIYA.aadObjectId,
      MARCUS.aadObjectId,
      billUser[PRIYA.id]!,
      billUser[MARCUS.id]!,
      bot.app.sandbox!.credentials.orgId,
      'Priya Raman',
    ])
      expect(links).not.toContain(plain);
    const audit = readFileSync(bot.app.audit.location, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(audit.filter((r) => r.action === 'approvals.connect' && r.result === 'ok').map((r) => r.aadObjectId)).toEqual([
      PRIYA.aadObjectId,
      MARCUS.aadObjectId,
    ]);
  });

  it('ignores a token typed after "connect": never used, not in the audit trail, with advice to replace it', async () => {
    const typed = { name: 'priya-typed', value: `typed-${randomBytes(8).toString('hex')}` };
    tokens.push(typed);
    const { card } = await inChannel(PRIYA, `connect ${typed.name} ${typed.value}`);
    expect(texts(card).join(' ')).toContain('delete that token in BILL');
    const dm = await personal(PRIYA, `connect ${typed.value}`);
    expect(texts(dm)[0]).toBe("Don't type your token in a message");
    const audit = readFileSync(bot.app.audit.location, 'utf8');
    expect(audit).not.toContain(typed.value);
    expect(audit).toContain('"command":"connect","args":[]');
  });
});

describe('approving from a channel card', () => {
  let bill: Bill;
  let other: Bill;
  let base: ReturnType<typeof channelMessage>;
  let shared: Card;
  let priyaView: Card;
  const CARD_ID = 'approvals-card-activity-1';

  beforeAll(async () => {
    // Priya's list holds just this test's bills (the demo data gives her others).
    const org = bot.app.sandbox!.org;
    for (const b of org.bills.all()) {
      if (!b.approvers?.some((a) => a.userId === billUser[PRIYA.id])) continue;
      b.approvers = b.approvers.filter((a) => a.userId !== billUser[PRIYA.id]);
      if (b.approvers.length === 0 && b.approvalStatus === 'ASSIGNED') b.approvalStatus = 'UNASSIGNED';
      org.bills.put(b);
    }
    bill = freshBill('2020-01-01');
    await control('POST', `/bills/${bill.id}/approvers`, { userIds: [billUser[PRIYA.id], billUser[MARCUS.id]] });
    other = freshBill('2020-01-02');
    await control('POST', `/bills/${other.id}/approvers`, { userIds: [billUser[PRIYA.id]] });
    nextMessageId(CARD_ID);
    ({ card: shared, base } = await inChannel(PRIYA, 'approvals'));
  });

  it('shows everyone a read-only card and gives only the approver buttons (refresh.userIds and per-user refresh)', async () => {
    expect(texts(shared)[0]).toBe("Waiting for Priya Raman's approval");
    expect(texts(shared).join(' ')).toContain(bill.invoice?.invoiceNumber ?? '');
    expect(buttons(shared, APPROVAL_VERBS.approve)).toEqual([]);
    expect(shared.refresh?.userIds).toEqual([PRIYA.id]);
    expect(shared.refresh?.action).toMatchObject({ type: 'Action.Execute', verb: APPROVAL_VERBS.view });

    priyaView = await click(base, shared.refresh!.action!.data!, PRIYA, CARD_ID, 'automatic');
    expect(buttonFor(priyaView, APPROVAL_VERBS.approve, bill.id)).toBeDefined();
    expect(buttonFor(priyaView, APPROVAL_VERBS.deny, bill.id)).toBeDefined();
    const tomView = await click(base, shared.refresh!.action!.data!, TOM, CARD_ID, 'automatic');
    expect(buttons(tomView, APPROVAL_VERBS.approve)).toEqual([]);
    expect(buttons(tomView, APPROVAL_VERBS.deny)).toEqual([]);
    // Marcus is next in the chain, but not yet: nothing is waiting on him for this bill.
    const marcus = await personal(MARCUS, 'approvals');
    expect(buttonFor(marcus, APPROVAL_VERBS.approve, bill.id)).toBeUndefined();
  });

  it("changes nothing when someone else clicks the approver's button", async () => {
    const before = { calls: actionCalls(), decisions: decisions().length, edits: edits(CARD_ID).length };
    const card = await click(base, buttonFor(priyaView, APPROVAL_VERBS.approve, bill.id)!, TOM, CARD_ID);
    expect(texts(card).join(' ')).toContain('Only the assigned approver can act: Priya Raman. Nothing was changed.');
    expect(buttons(card, APPROVAL_VERBS.approve)).toEqual([]);
    expect({ calls: actionCalls(), decisions: decisions().length, edits: edits(CARD_ID).length }).toEqual(before);
    expect(sandboxBill(bill.id).approvers!.map((a) => a.status)).toEqual(['WAITING', 'WAITING']);
  });

  it('changes nothing when the bill id on a button is altered', async () => {
    const before = { calls: actionCalls(), decisions: decisions().length };
    const data = buttonFor(priyaView, APPROVAL_VERBS.approve, bill.id)!;
    for (const tampered of [
      { ...data, bill: other.id },
      { ...data, verb: APPROVAL_VERBS.deny },
      { ...data, sig: 'x'.repeat(43) },
      { ...data, card: 'nosuchcard' },
    ]) {
      const card = await click(base, tampered, PRIYA, CARD_ID);
      expect(texts(card)[0]).toBe("This button can't be used");
    }
    expect({ calls: actionCalls(), decisions: decisions().length }).toEqual(before);
    expect(sandboxBill(bill.id).approvalStatus).toBe('ASSIGNED');
    expect(sandboxBill(other.id).approvalStatus).toBe('ASSIGNED');
  });

  it('approves in BILL as the approver and replaces the card for everyone with who approved and when', async () => {
    const row = nodes(priyaView.body)
      .filter((n) => n.type === 'Input.Text')
      .find((n) => n.id === `comment_0`);
    expect(row).toBeDefined();
    const data = { ...buttonFor(priyaView, APPROVAL_VERBS.approve, bill.id)!, comment_0: 'Matches PO 4471', comment_1: 'not this one' };
    const seen = bot.app.sandbox!.requests().length;
    const mine = await click(base, data, PRIYA, CARD_ID);
    // Two BILL calls, both in Priya's session: is it still waiting on her, then the decision.
    expect(
      bot.app
        .sandbox!.requests()
        .slice(seen)
        .map((r) => r.route),
    ).toEqual(['GET /v3/bill-approvals/pending-user-approvals', 'POST /v3/bill-approvals/actions']);

    const after = sandboxBill(bill.id);
    expect(after.approvers![0]).toMatchObject({ userId: billUser[PRIYA.id], status: 'APPROVED' });
    expect(after.approvalStatus).toBe('ASSIGNED');
    // BILL recorded Priya, signed in with her own sync token, as the one who approved: never the bot's user.
    expect(decisions().at(-1)).toMatchObject({
      billId: bill.id,
      userId: billUser[PRIYA.id],
      action: 'APPROVE',
      comment: 'Matches PO 4471',
      sessionKind: 'syncToken',
    });
    expect(decisions().every((d) => d.userId !== bot.app.sandbox!.credentials.userId)).toBe(true);

    expect(texts(mine).some((t) => /^Approved by Priya Raman at \d{1,2}:\d{2}( [AP]M)?$/.test(t))).toBe(true);
    expect(buttonFor(mine, APPROVAL_VERBS.approve, bill.id)).toBeUndefined();
    const [edit] = edits(CARD_ID);
    expect(edit).toBeDefined();
    const forAll = valid(ConnectorStandIn.card(edit!));
    expect(texts(forAll).some((t) => /^Approved by Priya Raman at \d{1,2}:\d{2}( [AP]M)?$/.test(t))).toBe(true);
    expect(buttons(forAll, APPROVAL_VERBS.approve)).toEqual([]);
    // The other bill still waits on Priya, so her own view keeps coming.
    expect(forAll.refresh?.userIds).toEqual([PRIYA.id]);

    const audit = readFileSync(bot.app.audit.location, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((r) => r.kind === 'approval' && r.billId === bill.id);
    expect(
      audit.filter((r) => r.result !== 'refused').map((r) => [r.result, r.aadObjectId, r.decision, r.comment, r.billResult ?? null]),
    ).toEqual([
      ['requested', PRIYA.aadObjectId, 'APPROVE', 'Matches PO 4471', null],
      ['ok', PRIYA.aadObjectId, 'APPROVE', 'Matches PO 4471', 'SUCCESS'],
    ]);
    expect(audit.filter((r) => r.result === 'refused').map((r) => r.reason)).toEqual(
      expect.arrayContaining(['not the assigned approver', 'card data altered']),
    );
  });

  it('changes nothing when the same click is replayed', async () => {
    const before = { calls: actionCalls(), decisions: decisions().length, edits: edits(CARD_ID).length };
    const card = await click(base, buttonFor(priyaView, APPROVAL_VERBS.approve, bill.id)!, PRIYA, CARD_ID);
    expect(texts(card).join(' ')).toContain('already decided');
    expect({ calls: actionCalls(), decisions: decisions().length, edits: edits(CARD_ID).length }).toEqual(before);
  });

  it('then shows the bill to the next approver, whose approval completes it', async () => {
    const marcus = await personal(MARCUS, 'approvals');
    expect(texts(marcus)[0]).toBe('Waiting for your approval');
    const data = buttonFor(marcus, APPROVAL_VERBS.approve, bill.id);
    expect(data).toBeDefined();
    const mine = await click(personalMessage('', { serviceUrl: bot.connector.url, from: MARCUS }), data!, MARCUS, 'marcus-card');
    expect(texts(mine).some((t) => t.startsWith('Approved by Marcus Lee at'))).toBe(true);
    expect(sandboxBill(bill.id).approvalStatus).toBe('APPROVED');
    expect(decisions().at(-1)).toMatchObject({ billId: bill.id, userId: billUser[MARCUS.id], sessionKind: 'syncToken' });
  });

  it('denies with a comment, and the bill no longer waits on anyone', async () => {
    const data = { ...buttonFor(priyaView, APPROVAL_VERBS.deny, other.id)!, comment_1: 'Duplicate of INV-2201' };
    const card = await click(base, data, PRIYA, CARD_ID);
    expect(texts(card).some((t) => t.startsWith('Denied by Priya Raman at'))).toBe(true);
    expect(texts(card)).toContain('“Duplicate of INV-2201”');
    expect(sandboxBill(other.id).approvalStatus).toBe('DENIED');
    const forAll = ConnectorStandIn.card(edits(CARD_ID).at(-1)!);
    // Both bills on the card are decided: no more per-user view to fetch.
    expect(forAll.refresh).toBeUndefined();
    expect(texts(forAll).filter((t) => /^(Approved|Denied) by Priya Raman/.test(t))).toHaveLength(2);
  });

  it('says nothing was sent when the bill was already decided in BILL before the click', async () => {
    const third = freshBill('2020-01-03');
    await control('POST', `/bills/${third.id}/approvers`, { userIds: [billUser[PRIYA.id]] });
    const { card, base: b } = await inChannel(PRIYA, 'approvals');
    const view = await click(b, card.refresh!.action!.data!, PRIYA, 'card-3', 'automatic');
    // Decided elsewhere (another approver or the BILL app) in the meantime.
    third.approvers![0]!.status = 'APPROVED';
    third.approvalStatus = 'APPROVED';
    bot.app.sandbox!.org.bills.put(third);
    const before = actionCalls();
    const mine = await click(b, buttonFor(view, APPROVAL_VERBS.approve, third.id)!, PRIYA, 'card-3');
    expect(texts(mine).join(' ')).toContain('no longer waiting for you in BILL. Nothing was sent.');
    expect(actionCalls()).toBe(before);
  });
});

describe('older Teams clients (Action.Submit fallback)', () => {
  it('approves by editing the card in place, and answers anyone else with a message of their own', async () => {
    const bill = freshBill('2020-01-04');
    await control('POST', `/bills/${bill.id}/approvers`, { userIds: [billUser[PRIYA.id]] });
    nextMessageId('submit-card');
    const { card, base } = await inChannel(PRIYA, 'approvals');
    const view = await click(base, card.refresh!.action!.data!, PRIYA, 'submit-card', 'automatic');
    const data = buttonFor(view, APPROVAL_VERBS.approve, bill.id)!;
    // What an Action.Submit fallback button sends: a message in the card's thread carrying the button's data as `value`.
    const submit = (who: Who) => ({
      ...channelMessage('', { serviceUrl: bot.connector.url, from: who, value: data, replyToId: 'submit-card', noMention: true }),
      conversation: base.conversation,
    });

    const messagesBefore = bot.connector.messages(base.conversation.id).length;
    await bot.send(submit(TOM));
    const [answer] = (await bot.connector.waitForMessages(messagesBefore + 1, base.conversation.id)).slice(messagesBefore);
    expect(texts(ConnectorStandIn.card(answer!)).join(' ')).toContain('Only the assigned approver can act');
    expect(edits('submit-card')).toHaveLength(0);
    expect(sandboxBill(bill.id).approvalStatus).toBe('ASSIGNED');

    await bot.send(submit(PRIYA));
    const [edit] = await bot.connector.waitFor(() => (edits('submit-card').length ? edits('submit-card') : undefined));
    expect(texts(ConnectorStandIn.card(edit!)).some((t) => t.startsWith('Approved by Priya Raman at'))).toBe(true);
    expect(sandboxBill(bill.id).approvalStatus).toBe('APPROVED');
  });
});

describe('a crafted click', () => {
  it("naming another of the bot's messages in replyToId does not edit that message: the decision is the approver's own, the edit goes nowhere", async () => {
    const bill = freshBill('2020-01-05');
    await control('POST', `/bills/${bill.id}/approvers`, { userIds: [billUser[PRIYA.id]] });
    nextMessageId('card-5');
    const { card, base } = await inChannel(PRIYA, 'approvals');
    const view = await click(base, card.refresh!.action!.data!, PRIYA, 'card-5', 'automatic');
    nextMessageId('help-card');
    await inChannel(PRIYA, 'help');
    const mine = await click(base, buttonFor(view, APPROVAL_VERBS.approve, bill.id)!, PRIYA, 'help-card');
    expect(texts(mine).some((t) => t.startsWith('Approved by Priya Raman at'))).toBe(true);
    expect(edits('help-card')).toEqual([]);
    expect(edits('card-5')).toEqual([]);
  });
});

describe("people's own sessions", () => {
  it("are their own BILL sessions, apart from the bot's, and left out of the bot's status and readiness", () => {
    const sandbox = bot.app.sandbox!;
    const live = [...sandbox.gate.sessions.values()];
    expect(live.some((s) => s.userId === billUser[PRIYA.id] && s.kind === 'syncToken')).toBe(true);
    expect(live.some((s) => s.userId === sandbox.credentials.userId && s.kind === 'password')).toBe(true);
    // Priya's session is live in the same organisation, yet the status lists only the bot's.
    expect(bot.app.bill.status().sessions.filter((s) => s.orgId === sandbox.credentials.orgId)).toHaveLength(1);
    // Every BILL call, theirs included, stayed within BILL's 3 in flight per org.
    expect(sandbox.stats().maxConcurrentByOrg[sandbox.credentials.orgId]).toBeLessThanOrEqual(3);
    expect(sandbox.stats().errorsByCode.BDC_1322 ?? 0).toBe(0);
  });
});

describe('disconnecting', () => {
  it('deletes the link, signs the session out of BILL, and approvals then ask to connect', async () => {
    const logoutsBefore = bot.app.sandbox!.stats().logouts;
    const card = await personal(MARCUS, 'disconnect');
    expect(texts(card)[0]).toBe('Disconnected from BILL');
    expect(bot.app.sandbox!.stats().logouts).toBeGreaterThan(logoutsBefore);
    const marcusId = billUser[MARCUS.id];
    expect([...bot.app.sandbox!.gate.sessions.values()].some((s) => s.userId === marcusId && s.kind === 'syncToken')).toBe(false);
    const after = await personal(MARCUS, 'approvals');
    expect(texts(after)[0]).toBe('Connect your BILL account first');
  });
});

describe('a token deleted in BILL', () => {
  it("is explained as the person's own sign-in to renew, not as the bot's credentials", async () => {
    const priyaId = billUser[PRIYA.id]!;
    const user = bot.app.sandbox!.org.users.get(priyaId)!;
    for (const t of user.syncTokens ?? []) await control('DELETE', `/users/${priyaId}/sync-tokens/${encodeURIComponent(t.name)}`);
    const card = await personal(PRIYA, 'approvals');
    expect(texts(card)[0]).toBe('BILL no longer accepts your sign-in');
    expect(bot.app.bill.ready()).toBe(true);
  });
});
