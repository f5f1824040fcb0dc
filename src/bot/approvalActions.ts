// Approvals from Teams, run as the approver: the feature's parts (links, card records, signing), the approvals card
// built from the person's own BILL session, and the card clicks — connect, approve, deny, and each user's view.
// Every click is re-checked on the server: signed data, the card's record, the clicker is that card's approver and
// linked, and the bill still waits on them in BILL. Only then is POST /v3/bill-approvals/actions sent, in their session.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { BillApiError, NotLinked, errorMessage } from '../errors.js';
import type { PersonCredentials } from '../bill/gateway.js';
import { BillFilter } from '../bill/filters.js';
import type { Bill, PendingApproval } from '../bill/types.js';
import type { ApprovalAudit } from '../state/audit.js';
import { conversationOf, type ApprovalAction, type ApprovalCardBill, type ApprovalCardState, type ApprovalCards } from '../state/approvalCards.js';
import { deriveKey } from '../state/sealing.js';
import type { UserLink, UserLinks } from '../state/userLinks.js';
import type { BillbridgeBot, CardActionContext, CardActionReply } from './bot.js';
import {
  APPROVAL_VERBS,
  CONNECT_INPUTS,
  MAX_CARD_BILLS,
  MAX_DECISION_COMMENT,
  approvalsCard,
  approvalsOffCard,
  commentInputId,
  connectCard,
  connectedCard,
  nothingWaitingCard,
  refusalCard,
  type ApprovalCardOptions,
} from './cards/approvals.js';
import type { CardReply } from './cards/card.js';
import { errorReply } from './cards/errorCards.js';
import { dateInZone, type FormatOptions } from './cards/format.js';
import { shortId } from './cards/redact.js';
import { SANDBOX_NOTE } from './commands/help.js';
import type { Caller, ConversationKind, ConversationScope } from './commands/types.js';
import type { BotServices } from './services.js';
import { auditActor } from './auditObserver.js';
import { linkAttemptKey, type LinkAttempts } from './linkAttempts.js';

export interface ApprovalsDeps {
  links: UserLinks;
  cards: ApprovalCards;
  /** config.secretsKey: approvals exist only with it. */
  secretsKey: Buffer;
  /** Per-person connect attempts (each signs in to BILL): an hourly cap and a cooldown after a refusal. */
  attempts: LinkAttempts;
}

/** The approvals feature, present in BotServices only when SECRETS_KEY is configured. */
export class Approvals {
  readonly links: UserLinks;
  readonly cards: ApprovalCards;
  readonly attempts: LinkAttempts;
  private readonly signKey: Buffer;

  constructor(deps: ApprovalsDeps) {
    this.links = deps.links;
    this.cards = deps.cards;
    this.attempts = deps.attempts;
    this.signKey = deriveKey(deps.secretsKey, 'approval-cards/sign/v1');
  }

  /** HMAC of a click's (verb, card, bill): data a client changed does not verify. */
  sign = (verb: string, cardId: string, billId: string): string => createHmac('sha256', this.signKey).update(`v1|${verb}|${cardId}|${billId}`).digest('base64url');

  verify(verb: string, cardId: string, billId: string, sig: string): boolean {
    const want = Buffer.from(this.sign(verb, cardId, billId));
    const got = Buffer.from(sig);
    return got.length === want.length && timingSafeEqual(got, want);
  }

  /** The person's own BILL sign-in: sync token name as username, value as password, a session slot of their own. */
  person(link: UserLink): PersonCredentials {
    return { username: link.token.name, password: link.token.value, owner: `${link.tenantId}|${link.aadObjectId}` };
  }
}

/** Where an approvals card goes. */
export interface CardTarget {
  kind: ConversationKind;
  tenantId: string;
  conversationId: string;
}

/** BILL refusing a person's token means their link went stale (token deleted), not that the bot's credentials are wrong. */
async function asPerson<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof BillApiError && err.category === 'credentials') throw new NotLinked('tokenRefused');
    throw err;
  }
}

function str(v: unknown, max = 200): string | undefined {
  return typeof v === 'string' && v.length > 0 && v.length <= max ? v : undefined;
}

function fmtOf(services: BotServices, locale?: string): FormatOptions {
  return { locale: locale ?? services.config.locale, timeZone: services.config.timeZone };
}

function noteOf(services: BotServices): string | undefined {
  return services.backend.kind === 'sandbox' ? SANDBOX_NOTE : undefined;
}

function cardOptions(services: BotServices, approvals: Approvals, state: ApprovalCardState, actionable: boolean, extra: Partial<ApprovalCardOptions> = {}): ApprovalCardOptions {
  const now = services.clock.now();
  return {
    state,
    actionable,
    fmt: fmtOf(services),
    today: dateInZone(now, services.config.timeZone),
    sign: approvals.sign,
    asOf: state.updatedAt ?? now,
    note: noteOf(services),
    ...extra,
  };
}

/** What everyone in the conversation sees: the approver's view in a personal chat, read-only elsewhere. */
function sharedView(services: BotServices, approvals: Approvals, state: ApprovalCardState): CardReply {
  return approvalsCard(cardOptions(services, approvals, state, state.kind === 'personal'));
}

/**
 * The bills waiting for a linked person, read in their own BILL session, as a card recorded server-side. In a personal
 * chat the card carries the buttons; elsewhere it is read-only and names the person in refresh.userIds.
 */
export async function pendingApprovalsReply(
  services: BotServices,
  link: UserLink,
  target: CardTarget,
  approver: { teamsUserId: string; name: string },
  opts: { locale?: string; priority?: 'interactive' | 'background' } = {},
): Promise<{ reply: CardReply; waiting: number }> {
  const approvals = services.approvals;
  if (!approvals) return { reply: approvalsOffCard(), waiting: 0 };
  const client = services.bill.orgAs(link.orgId, approvals.person(link), { priority: opts.priority ?? 'interactive' });
  const pending = await asPerson(() => client.approvals.pending());
  const now = services.clock.now();
  const fmt = fmtOf(services, opts.locale);
  if (pending.length === 0) return { reply: nothingWaitingCard({ name: approver.name, personal: target.kind === 'personal', asOf: now, fmt, note: noteOf(services) }), waiting: 0 };
  const shown = [...pending].sort((a, b) => a.dueDate.localeCompare(b.dueDate) || a.billId.localeCompare(b.billId)).slice(0, MAX_CARD_BILLS);
  const bills = await asPerson(() => billDetails(client, shown));
  const vendors = await services.mirror.names(link.orgId, 'vendor', shown.map((p) => p.vendorId), { priority: opts.priority ?? 'interactive', waitMs: services.config.limits.commandWaitMs }).catch(() => new Map());
  const rows: ApprovalCardBill[] = shown.map((p) => {
    const bill = bills.get(p.billId);
    const vendor = vendors.get(p.vendorId);
    return {
      billId: p.billId,
      vendorName: bill?.vendorName || vendor?.name || `Vendor ${shortId(p.vendorId)}`,
      amount: p.amount,
      currency: vendor?.currency,
      dueDate: p.dueDate,
      invoiceNumber: bill?.invoice?.invoiceNumber || undefined,
    };
  });
  const state: ApprovalCardState = {
    id: approvals.cards.newId(),
    tenantId: target.tenantId.toLowerCase(),
    conversationId: conversationOf(target.conversationId),
    kind: target.kind,
    orgId: link.orgId,
    approver: { aadObjectId: link.aadObjectId, teamsUserId: approver.teamsUserId, name: approver.name },
    bills: rows,
    more: pending.length - shown.length,
    createdAt: now,
    updatedAt: now,
  };
  await approvals.cards.save(state);
  return { reply: approvalsCard({ ...cardOptions(services, approvals, state, target.kind === 'personal'), fmt }), waiting: pending.length };
}

/** Invoice numbers (and vendor names) of the shown bills, in one list call in the person's session; a failure shows ids. */
async function billDetails(client: ReturnType<BotServices['bill']['orgAs']>, shown: PendingApproval[]): Promise<Map<string, Bill>> {
  try {
    const { items } = await client.bills.list({ filter: new BillFilter().in('id', shown.map((p) => p.billId)), pageSize: shown.length, maxPages: 1 }).all();
    return new Map(items.map((b) => [b.id, b]));
  } catch (err) {
    if (err instanceof BillApiError && (err.category === 'credentials' || err.category === 'session')) throw err;
    return new Map();
  }
}

/** Says something to the clicker only; the card stays as everyone sees it. */
function privately(reply: CardReply): CardActionReply {
  return { ...reply, privateReply: true };
}

async function auditRefusal(ctx: CardActionContext, state: ApprovalCardState | undefined, billId: string, decision: ApprovalAction, reason: string): Promise<void> {
  ctx.log.warn({ reason, card: state?.id, bill: shortId(billId) }, 'approval click refused');
  await ctx.services.audit
    .approval({ ...auditActor(ctx.scope, ctx.caller), orgId: state?.orgId ?? 'unknown', billId, decision, result: 'refused', reason, correlationId: ctx.correlationId })
    .catch(() => undefined);
}

function isApprover(state: ApprovalCardState, caller: Caller): boolean {
  return !!caller.aadObjectId && caller.aadObjectId.toLowerCase() === state.approver.aadObjectId;
}

function sameConversation(state: ApprovalCardState, scope: ConversationScope): boolean {
  return state.tenantId === (scope.tenantId ?? '').toLowerCase() && state.conversationId === conversationOf(scope.conversationId);
}

/** Approve or Deny clicked on an approval card. */
async function decide(ctx: CardActionContext, action: ApprovalAction): Promise<CardActionReply> {
  const { services, data, caller, scope, log } = ctx;
  const approvals = services.approvals;
  if (!approvals) return privately(approvalsOffCard());
  const verb = action === 'APPROVE' ? APPROVAL_VERBS.approve : APPROVAL_VERBS.deny;
  const cardId = str(data.card, 64);
  const billId = str(data.bill, 64);
  const sig = str(data.sig, 128);
  const unusable = refusalCard("This button can't be used", 'Nothing was changed. Type **approvals** for a fresh list.');
  if (!cardId || !billId || !sig || !approvals.verify(verb, cardId, billId, sig)) {
    await auditRefusal(ctx, cardId ? await approvals.cards.get(cardId) : undefined, billId ?? 'unknown', action, 'card data altered');
    return privately(unusable);
  }
  const state = await approvals.cards.get(cardId);
  if (!state) return privately(refusalCard('This approval card has expired', 'Nothing was changed. Type **approvals** for a fresh list.'));
  const row = state.bills.findIndex((b) => b.billId === billId);
  if (row < 0 || !sameConversation(state, scope)) {
    await auditRefusal(ctx, state, billId, action, row < 0 ? 'bill not on this card' : 'card from another conversation');
    return privately(unusable);
  }
  if (!isApprover(state, caller)) {
    await auditRefusal(ctx, state, billId, action, 'not the assigned approver');
    const notice = { text: `Only the assigned approver can act: ${state.approver.name}. Nothing was changed.`, tone: 'attention' as const };
    return privately(approvalsCard(cardOptions(services, approvals, state, false, { notice })));
  }
  const bill = state.bills[row]!;
  if (bill.decision || bill.gone) {
    await auditRefusal(ctx, state, billId, action, 'already decided on this card');
    const notice = { text: 'That bill is already decided on this card. Nothing was sent to BILL.', tone: 'warning' as const };
    return privately(approvalsCard(cardOptions(services, approvals, state, true, { notice })));
  }
  const link = await approvals.links.get({ tenantId: state.tenantId, aadObjectId: state.approver.aadObjectId, orgId: state.orgId });
  if (!link) {
    await auditRefusal(ctx, state, billId, action, 'not linked');
    return privately(errorReply(new NotLinked(), { correlationId: ctx.correlationId }));
  }
  if (!(await approvals.cards.lock(state.orgId, billId))) {
    return privately(approvalsCard(cardOptions(services, approvals, state, true, { notice: { text: 'A decision on this bill is already on its way to BILL.', tone: 'warning' } })));
  }
  try {
    const client = services.bill.orgAs(state.orgId, approvals.person(link), { priority: 'interactive' });
    // The server-side check that matters: is the bill still waiting on this person, in their own BILL session?
    const pending = await asPerson(() => client.approvals.pending());
    if (!pending.some((p) => p.billId === billId)) {
      await auditRefusal(ctx, state, billId, action, 'no longer waiting on the approver in BILL');
      state.bills[row] = { ...bill, gone: true };
      await approvals.cards.save(state);
      const notice = { text: 'This bill is no longer waiting for you in BILL. Nothing was sent.', tone: 'warning' as const };
      return { ...approvalsCard(cardOptions(services, approvals, state, true, { notice })), everyone: sharedView(services, approvals, state) };
    }
    const comment = readComment(data[commentInputId(row)]);
    const record: ApprovalAudit = { ...auditActor(scope, caller), orgId: state.orgId, billId, decision: action, result: 'requested', comment, billUserId: link.billUserId, correlationId: ctx.correlationId };
    // No trace, no request: if the audit trail cannot be written, nothing goes to BILL.
    await services.audit.approval(record);
    let status: string;
    try {
      status = (await client.approvals.act([{ billId, action, comment }])).status;
    } catch (err) {
      const billResult = err instanceof BillApiError ? `${err.category}${err.code ? ':' + err.code : ''} (HTTP ${err.status})` : errorMessage(err).slice(0, 60);
      await services.audit.approval({ ...record, result: 'error', billResult }).catch(() => undefined);
      throw err;
    }
    const accepted = status === 'SUCCESS' || status === 'OK';
    await services.audit.approval({ ...record, result: accepted ? 'ok' : 'error', billResult: status }).catch((err) => log.error({ err: errorMessage(err) }, 'approval went through in BILL but its audit record failed'));
    if (!accepted) return privately(refusalCard('BILL did not confirm the decision', `BILL answered "${status.slice(0, 40)}". Check the bill in BILL before trying again.`));
    const at = services.clock.now();
    state.bills[row] = { ...bill, decision: { action, byName: caller.name || link.displayName || 'the approver', at, ...(comment ? { comment } : {}) } };
    state.updatedAt = at;
    await approvals.cards.save(state);
    log.info({ orgId: state.orgId, bill: shortId(billId), action }, 'approval decision accepted by BILL');
    return { ...approvalsCard(cardOptions(services, approvals, state, true)), everyone: sharedView(services, approvals, state) };
  } catch (err) {
    log.warn({ err: errorMessage(err), errName: err instanceof Error ? err.name : typeof err }, 'approval decision failed');
    return privately(errorReply(err, { correlationId: ctx.correlationId, now: () => services.clock.now() }));
  } finally {
    await approvals.cards.unlock(state.orgId, billId).catch(() => undefined);
  }
}

function readComment(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const flat = value.replace(/[\u0000-\u001F\u007F]+/g, ' ').trim();
  return flat === '' ? undefined : flat.slice(0, MAX_DECISION_COMMENT);
}

/** Teams asking for one user's view of a shared approval card (refresh.userIds, or a manual Refresh). */
async function view(ctx: CardActionContext): Promise<CardActionReply> {
  const { services, data, caller, scope } = ctx;
  const approvals = services.approvals;
  if (!approvals) return privately(approvalsOffCard());
  const cardId = str(data.card, 64);
  const sig = str(data.sig, 128);
  const state = cardId && sig && approvals.verify(APPROVAL_VERBS.view, cardId, '', sig) ? await approvals.cards.get(cardId) : undefined;
  if (!state || !sameConversation(state, scope)) return privately(refusalCard('This approval card has expired', 'Type **approvals** for a fresh list.'));
  return approvalsCard(cardOptions(services, approvals, state, isApprover(state, caller)));
}

/** The connect form was submitted: verify the token by signing in once, then keep it sealed. */
async function connect(ctx: CardActionContext): Promise<CardActionReply> {
  const { services, data, caller, scope, log } = ctx;
  const approvals = services.approvals;
  // Where and who first: the token is not even read in a channel. It is never logged or recorded (only its outcome
  // is), and not taught to the log scrubber, where a value a person chose would censor the same text in every line.
  if (!approvals) return privately(approvalsOffCard());
  if (scope.kind !== 'personal') return privately(refusalCard('Connect in a personal chat', 'I never take BILL sign-ins in a channel or group chat. If you entered a token here, delete it in BILL and create a new one.'));
  const orgBindings = services.orgBindings;
  let orgId = await services.bindings.resolve(scope);
  const askOrg = !orgId && orgBindings?.mode === 'multi';
  // In a personal chat "everyone" is the person on their other devices: the form with what they typed goes everywhere.
  const form = (problem: string): CardActionReply => {
    const card = connectCard({ askOrg, problem, note: noteOf(services) });
    return { ...card, everyone: card };
  };
  if (!caller.aadObjectId || !scope.tenantId) return privately(refusalCard("I can't tell who you are", 'Teams did not say which Microsoft 365 account sent this. Try again from the Teams app.'));
  // The size before anything else is done with the value (a 60,000-character "token" is not one).
  const rawName = data[CONNECT_INPUTS.tokenName];
  const rawValue = data[CONNECT_INPUTS.tokenValue];
  const tokenName = typeof rawName === 'string' && rawName.length <= 1_000 ? rawName.trim() : '';
  const tokenValue = typeof rawValue === 'string' && rawValue.length <= 1_000 ? rawValue.trim() : '';
  if (!tokenName || !tokenValue || tokenName.length > 200 || tokenValue.length > 500) return form('Enter both the token name and the token.');
  if (!orgId && askOrg) {
    const typed = typeof data[CONNECT_INPUTS.orgId] === 'string' ? (data[CONNECT_INPUTS.orgId] as string) : '';
    orgId = orgBindings!.allowedOrg(typed);
    if (!orgId) return form("That organisation isn't one this billbridge may use. Check the organisation id in BILL (Settings › Company profile).");
  }
  if (!orgId) return privately(errorReply(new Error('no organisation'), { correlationId: ctx.correlationId }));
  const ref = { tenantId: scope.tenantId, aadObjectId: caller.aadObjectId, orgId };
  const previous = await approvals.links.get(ref);
  const person: PersonCredentials = { username: tokenName, password: tokenValue, owner: `${ref.tenantId.toLowerCase()}|${ref.aadObjectId.toLowerCase()}` };
  const audit = (result: 'ok' | 'refused' | 'error', detail?: Record<string, string>) =>
    services.audit.admin({ ...auditActor(scope, caller), action: 'approvals.connect', orgId, result, detail, correlationId: ctx.correlationId });
  // Each attempt signs in to BILL: a person gets a few an hour, and waits after a refused one.
  const attemptKey = linkAttemptKey(ref.tenantId, ref.aadObjectId);
  const turn = await approvals.attempts.take(attemptKey);
  if (!turn.allowed) {
    await audit('refused', { reason: turn.why === 'cooldown' ? 'connect cooldown' : 'connect attempts per hour' }).catch(() => undefined);
    log.info({ orgId, why: turn.why, retryInS: Math.ceil(turn.retryInMs / 1000) }, 'connect attempt refused before BILL: too soon or too many');
    return form(linkWaitText(services, turn.why, turn.retryInMs));
  }
  let billUserId: string;
  try {
    const who = await services.bill.orgAs(orgId, person, { priority: 'interactive' }).whoami();
    if (who.organizationId && who.organizationId !== orgId) throw new BillApiError({ category: 'credentials', status: 200, message: 'signed in to another organisation' });
    billUserId = who.userId;
  } catch (err) {
    await services.bill.releaseAs(orgId, person).catch(() => undefined);
    if (err instanceof BillApiError && err.category === 'credentials') {
      await approvals.attempts.refused(attemptKey);
      await audit('refused', { reason: 'BILL refused the token' }).catch(() => undefined);
      log.info({ orgId }, 'approver link refused: BILL did not accept the token');
      return form('BILL did not accept that token for this organisation. Check you copied the whole token and its exact name, then try again.');
    }
    throw err;
  }
  const now = services.clock.now();
  const link: UserLink = {
    ...ref,
    billUserId,
    token: { name: tokenName, value: tokenValue },
    teamsUserId: caller.id,
    displayName: caller.name,
    reference: ctx.reference,
    digestTime: previous?.digestTime,
    digestSince: previous?.digestSince,
    linkedAt: previous?.linkedAt ?? now,
    updatedAt: now,
  };
  await approvals.links.put(link);
  try {
    await audit('ok', { billUser: shortId(billUserId), replaced: previous ? 'yes' : 'no' });
  } catch (err) {
    // No trace, no link.
    if (previous) await approvals.links.put(previous).catch(() => undefined);
    else await approvals.links.remove(ref).catch(() => undefined);
    await services.bill.releaseAs(orgId, person).catch(() => undefined);
    throw err;
  }
  if (previous && (previous.token.name !== tokenName || previous.token.value !== tokenValue)) await services.bill.releaseAs(orgId, approvals.person(previous)).catch(() => undefined);
  log.info({ orgId, billUser: shortId(billUserId), replaced: !!previous }, 'approver linked to BILL');
  const done = connectedCard({ billUserId, orgId, replaced: !!previous, note: noteOf(services) });
  return { ...done, everyone: done };
}

/** "Try again at 10:42 (in 60 s)": when a person may make their next connect attempt. */
function linkWaitText(services: BotServices, why: 'cooldown' | 'hourly', retryInMs: number): string {
  const at = new Intl.DateTimeFormat(services.config.locale, { hour: '2-digit', minute: '2-digit', timeZone: services.config.timeZone }).format(new Date(services.clock.now() + retryInMs));
  const wait = retryInMs < 120_000 ? `${Math.ceil(retryInMs / 1000)} s` : `${Math.ceil(retryInMs / 60_000)} min`;
  return why === 'cooldown'
    ? `BILL did not accept the last token. To protect the sign-ins everyone shares, try again at ${at} (in ${wait}).`
    : `You have tried to connect several times this hour. To protect the sign-ins everyone shares, try again at ${at} (in ${wait}).`;
}

/** Registers the approvals card verbs with the bot. */
export function registerApprovalActions(bot: BillbridgeBot): void {
  const guarded = (fn: (ctx: CardActionContext) => Promise<CardActionReply>) => async (ctx: CardActionContext): Promise<CardActionReply> => {
    try {
      return await fn(ctx);
    } catch (err) {
      ctx.log.warn({ verb: ctx.data.verb, err: errorMessage(err), errName: err instanceof Error ? err.name : typeof err }, 'approvals card action failed');
      return privately(errorReply(err, { correlationId: ctx.correlationId, now: () => ctx.services.clock.now() }));
    }
  };
  bot
    .onCardAction(APPROVAL_VERBS.connect, guarded(connect))
    .onCardAction(APPROVAL_VERBS.approve, guarded((ctx) => decide(ctx, 'APPROVE')))
    .onCardAction(APPROVAL_VERBS.deny, guarded((ctx) => decide(ctx, 'DENY')))
    .onCardAction(APPROVAL_VERBS.view, guarded(view));
}
