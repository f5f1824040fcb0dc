// Approvals from Teams, run as the approver: the approvals card from their own BILL session, and its clicks (connect,
// approve, deny, each user's view). A decision is sent only after the signature, the card's record, the clicker and
// BILL's own pending list all agree.
import { randomBytes } from 'node:crypto';
import { BillApiError, NotLinked, errorMessage, errorName } from '../../errors.js';
import type { BillGateway } from '../../bill/gateway.js';
import { BillFilter } from '../../bill/filters.js';
import type { Bill } from '../../bill/types.js';
import type { Clock } from '../../infra/clock.js';
import type { Priority } from '../../infra/limits/types.js';
import type { Mirror } from '../../mirror/mirror.js';
import type { ApprovalAudit, AuditTrail } from '../../infra/audit.js';
import type { OrgBindings } from '../../bindings/bindings.js';
import type { CardActionContext, CardActionHandler, CardActionReply } from '../dispatch.js';
import { escapeMarkdown, shortId, type CardReply } from '../../cards/card.js';
import { errorReply } from '../../cards/errorCards.js';
import { clockTime, type FormatOptions } from '../../cards/format.js';
import { dateInZone } from '../../infra/calendar.js';
import { whileHeld, withEditLock } from '../../infra/state/editLock.js';
import { NS, type StateStore } from '../../infra/state/types.js';
import { conversationOf, type Caller, type ConversationScope } from '../types.js';
import { auditActor, auditAdmin, auditOrUndo } from '../audit.js';
import { buttonSigner, dataString, type ApprovalAction, type ApprovalCardBill, type ApprovalCardState } from './cardRecords.js';
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
} from './cards.js';
import type { LinkAttempts } from './linkAttempts.js';
import { asPerson, personCredentials, type UserLink, type UserLinks } from './userLinks.js';

/** What the approvals feature uses, built once in app.ts, only when SECRETS_KEY (`secretsKey`) is configured. */
interface ApprovalsDeps {
  links: UserLinks;
  /** Where approval cards are recorded (NS.approvalCards). */
  store: StateStore;
  secretsKey: Buffer;
  attempts: LinkAttempts;
  /** BILL as a person: their own session slot (orgAs), signed out on disconnect (releaseAs). */
  bill: Pick<BillGateway, 'orgAs' | 'releaseAs' | 'forgetRefusedAs'>;
  /** Vendor names for the approvals list, from the org's mirror, waiting at most `waitMs` for it. */
  vendors: Pick<Mirror, 'names'>;
  waitMs: number;
  /** The conversation's org; the mode and allowed orgs for a personal chat bound to none. */
  orgs: Pick<OrgBindings, 'resolve' | 'mode' | 'allowedOrg'>;
  audit: AuditTrail;
  clock: Clock;
  fmt: FormatOptions;
  /** The footer note while the sandbox stands in for BILL. */
  note: string | undefined;
}

/** How long a card's buttons keep working. */
const APPROVAL_CARD_TTL_MS = 14 * 24 * 3_600_000;
/** A decision in flight holds its bill this long at most (double clicks, two devices, two instances). */
const DECISION_LOCK_MS = 2 * 60_000;

export type ApprovalClick = Pick<CardActionContext, 'data' | 'scope' | 'caller' | 'correlationId' | 'log' | 'reference'>;

export class Approvals {
  readonly links: UserLinks;
  readonly note: string | undefined;
  private readonly signer: ReturnType<typeof buttonSigner>;

  constructor(private readonly deps: ApprovalsDeps) {
    this.links = deps.links;
    this.note = deps.note;
    this.signer = buttonSigner(deps.secretsKey, 'approval-cards/sign/v1');
  }

  /** BOT_TIMEZONE, in the conversation's locale (else BOT_LOCALE). */
  formatFor(locale: string | undefined): FormatOptions {
    return { locale: locale ?? this.deps.fmt.locale, timeZone: this.deps.fmt.timeZone };
  }

  /** Signs the person's BILL session out (disconnect, or a replaced token); BILL ends it by itself otherwise. */
  release(link: UserLink): Promise<void> {
    return this.deps.bill.releaseAs(link.orgId, personCredentials(link));
  }

  private card(state: ApprovalCardState, actionable: boolean, notice?: ApprovalCardOptions['notice'], fmt = this.deps.fmt): CardReply {
    const today = dateInZone(this.deps.clock.now(), fmt.timeZone);
    return approvalsCard({ state, actionable, fmt, today, sign: this.signer.sign, note: this.note, notice });
  }

  /** The approver's card after a click, and what everyone sees: the approver's view in a personal chat, read-only elsewhere. */
  private changed(state: ApprovalCardState, notice?: ApprovalCardOptions['notice']): CardActionReply {
    return { ...this.card(state, true, notice), everyone: this.card(state, state.kind === 'personal') };
  }

  /** The first MAX_CARD_BILLS bills waiting for a linked person (soonest due), read in their own session, and how many wait. */
  async pending(link: UserLink, priority: Priority = 'interactive'): Promise<{ rows: ApprovalCardBill[]; waiting: number }> {
    const client = this.deps.bill.orgAs(link.orgId, personCredentials(link), { priority });
    const pending = await asPerson(() => client.approvals.pending());
    if (pending.length === 0) return { rows: [], waiting: 0 };
    const shown = [...pending]
      .sort((a, b) => a.dueDate.localeCompare(b.dueDate) || a.billId.localeCompare(b.billId))
      .slice(0, MAX_CARD_BILLS);
    // Invoice numbers (and vendor names) of the shown bills, in one list call in the person's session; a failure shows ids.
    const ids = shown.map((p) => p.billId);
    const bills = await asPerson(() =>
      client.bills.list({ filter: new BillFilter().add('id', 'in', ids), pageSize: ids.length, maxPages: 1 }).all(),
    ).then(
      ({ items }) => new Map(items.map((b) => [b.id, b])),
      (err: unknown) => {
        if (err instanceof NotLinked || (err instanceof BillApiError && err.category === 'session')) throw err;
        return new Map<string, Bill>();
      },
    );
    const vendorIds = shown.map((p) => p.vendorId);
    const vendors = await this.deps.vendors
      .names(link.orgId, 'vendor', vendorIds, { priority, waitMs: this.deps.waitMs })
      .catch(() => new Map<string, { name: string; currency?: string }>());
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
    return { rows, waiting: pending.length };
  }

  /** The same bills as a card recorded server-side: with the buttons in a personal chat, read-only elsewhere. */
  async pendingReply(
    link: UserLink,
    target: Pick<ApprovalCardState, 'kind' | 'conversationId'>,
    opts: { locale?: string; priority?: Priority } = {},
  ): Promise<{ reply: CardReply; waiting: number }> {
    const { rows, waiting } = await this.pending(link, opts.priority);
    const now = this.deps.clock.now();
    const fmt = this.formatFor(opts.locale);
    const name = link.displayName || 'you';
    if (waiting === 0)
      return { reply: nothingWaitingCard({ name, personal: target.kind === 'personal', asOf: now, fmt, note: this.note }), waiting: 0 };
    const state: ApprovalCardState = {
      id: randomBytes(16).toString('base64url'),
      tenantId: link.tenantId,
      conversationId: conversationOf(target.conversationId),
      kind: target.kind,
      orgId: link.orgId,
      approver: { aadObjectId: link.aadObjectId, teamsUserId: link.teamsUserId, name },
      bills: rows,
      more: waiting - rows.length,
      createdAt: now,
      updatedAt: now,
    };
    await this.save(state);
    return { reply: this.card(state, target.kind === 'personal', undefined, fmt), waiting };
  }

  private async record(id: string): Promise<ApprovalCardState | undefined> {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) return undefined;
    return this.deps.store.get<ApprovalCardState>(NS.approvalCards, `card|${id}`);
  }

  private save(state: ApprovalCardState): Promise<void> {
    const now = this.deps.clock.now();
    const ttlMs = Math.max(60_000, state.createdAt + APPROVAL_CARD_TTL_MS - now);
    return this.deps.store.set(NS.approvalCards, `card|${state.id}`, { ...state, updatedAt: now }, { ttlMs });
  }

  /** One change at a time, so bills decided at once all stay decided (a dead holder is waited ~2 s); once expired, on the clicked state. */
  private async markBill(clicked: ApprovalCardState, billId: string, change: (bill: ApprovalCardBill) => ApprovalCardBill) {
    const marked = async (state: ApprovalCardState) => {
      const next = { ...state, bills: state.bills.map((b) => (b.billId === billId ? change(b) : b)) };
      await this.save(next);
      return next;
    };
    const lease = { at: { ns: NS.approvalCards, key: `edit|${clicked.id}` } };
    const updated = await withEditLock(this.deps, lease, async () => {
      const state = await this.record(clicked.id);
      return state && marked(state);
    });
    return updated ?? marked(clicked);
  }

  async decide(click: ApprovalClick, action: ApprovalAction): Promise<CardActionReply> {
    const { data, caller, scope, log, correlationId } = click;
    const { audit, clock } = this.deps;
    const verb = action === 'APPROVE' ? APPROVAL_VERBS.approve : APPROVAL_VERBS.deny;
    const cardId = dataString(data.card, 64);
    const billId = dataString(data.bill, 64);
    const about = { ...auditActor(scope, caller), billId: billId ?? 'unknown', decision: action, correlationId };
    // A refused click is logged and audited (when the trail can be written), then answered.
    const refuse = async (state: ApprovalCardState | undefined, reason: string, reply: CardActionReply): Promise<CardActionReply> => {
      log.warn({ reason, card: state?.id, bill: shortId(about.billId) }, 'approval click refused');
      await audit.approval({ ...about, orgId: state?.orgId ?? 'unknown', result: 'refused', reason }).catch(() => undefined);
      return reply;
    };
    const fresh = 'Nothing was changed. Type **approvals** for a fresh list.';
    const unusable = refusalCard("This button can't be used", fresh);
    const state = cardId ? await this.record(cardId) : undefined;
    if (!cardId || !billId || !this.signer.verify(data.sig, verb, cardId, billId)) return refuse(state, 'card data altered', unusable);
    if (!state) return refusalCard('This approval card has expired', fresh);
    const row = state.bills.findIndex((b) => b.billId === billId);
    const bill = state.bills[row];
    if (!bill || !sameConversation(state, scope))
      return refuse(state, bill ? 'card from another conversation' : 'bill not on this card', unusable);
    if (!isApprover(state, caller)) {
      const text = `Only the assigned approver can act: ${escapeMarkdown(state.approver.name)}. Nothing was changed.`;
      return refuse(state, 'not the assigned approver', privately(this.card(state, false, { text, tone: 'attention' })));
    }
    if (bill.decision || bill.gone) {
      const text = 'That bill is already decided on this card. Nothing was sent to BILL.';
      return refuse(state, 'already decided on this card', privately(this.card(state, true, { text, tone: 'warning' })));
    }
    const link = await this.links.get({ tenantId: state.tenantId, aadObjectId: state.approver.aadObjectId, orgId: state.orgId });
    if (!link) return refuse(state, 'not linked', privately(errorReply(new NotLinked(), { correlationId })));
    // One decision at a time per bill of an org, whichever card it comes from: undefined when one is in flight.
    const lock = { ns: NS.approvalCards, key: `lock|${state.orgId}|${billId}` };
    const reply = await whileHeld(this.deps.store, clock, lock, DECISION_LOCK_MS, async () => {
      const client = this.deps.bill.orgAs(state.orgId, personCredentials(link), { priority: 'interactive' });
      // The server-side check that matters: is the bill still waiting on this person, in their own BILL session?
      const pending = await asPerson(() => client.approvals.pending());
      if (!pending.some((p) => p.billId === billId)) {
        const now = await this.markBill(state, billId, (b) => (b.decision ? b : { ...b, gone: true }));
        const text = 'This bill is no longer waiting for you in BILL. Nothing was sent.';
        return await refuse(now, 'no longer waiting on the approver in BILL', this.changed(now, { text, tone: 'warning' }));
      }
      const comment = readComment(data[commentInputId(row)]);
      const record: ApprovalAudit = { ...about, orgId: state.orgId, result: 'requested', comment, billUserId: link.billUserId };
      // No trace, no request: if the audit trail cannot be written, nothing goes to BILL.
      await audit.approval(record);
      const { status } = await client.approvals.act([{ billId, action, comment }]).catch(async (err: unknown) => {
        const billResult =
          err instanceof BillApiError
            ? `${err.category}${err.code ? ':' + err.code : ''} (HTTP ${err.status})`
            : errorMessage(err).slice(0, 60);
        await audit.approval({ ...record, result: 'error', billResult }).catch(() => undefined);
        throw err;
      });
      const accepted = status === 'SUCCESS' || status === 'OK';
      await audit
        .approval({ ...record, result: accepted ? 'ok' : 'error', billResult: status })
        .catch((err: unknown) => log.error({ err: errorMessage(err) }, 'approval went through in BILL but its audit record failed'));
      if (!accepted) {
        const why = `BILL answered "${escapeMarkdown(status.slice(0, 40))}". Check the bill in BILL before trying again.`;
        return refusalCard('BILL did not confirm the decision', why);
      }
      const at = clock.now();
      const decision = { action, byName: caller.name || link.displayName || 'the approver', at, ...(comment ? { comment } : {}) };
      const now = await this.markBill(state, billId, (b) => ({ ...b, decision }));
      log.info({ orgId: state.orgId, bill: shortId(billId), action }, 'approval decision accepted by BILL');
      return this.changed(now);
    });
    return reply ?? privately(this.card(state, true, { text: 'A decision on this bill is already on its way to BILL.', tone: 'warning' }));
  }

  /** Teams asking for one user's view of a shared approval card (refresh.userIds, or a manual Refresh). */
  async view(click: ApprovalClick): Promise<CardActionReply> {
    const { data, caller, scope } = click;
    const cardId = dataString(data.card, 64);
    const state = cardId && this.signer.verify(data.sig, APPROVAL_VERBS.view, cardId, '') ? await this.record(cardId) : undefined;
    if (!state || !sameConversation(state, scope))
      return refusalCard('This approval card has expired', 'Type **approvals** for a fresh list.');
    return this.card(state, isApprover(state, caller));
  }

  /** The connect form was submitted: verify the token by signing in once, then keep it sealed. */
  async connect(click: ApprovalClick): Promise<CardActionReply> {
    const { data, caller, scope, log } = click;
    const { bill, orgs, clock } = this.deps;
    // Where and who first: the token is not even read in a channel. It is never logged or recorded (only its outcome
    // is), nor taught to the log scrubber (see UserLink.token).
    if (scope.kind !== 'personal') {
      const why =
        'I never take BILL sign-ins in a channel or group chat. If you entered a token here, delete it in BILL and create a new one.';
      return refusalCard('Connect in a personal chat', why);
    }
    let orgId = await orgs.resolve(scope);
    const askOrg = !orgId && orgs.mode === 'multi';
    // In a personal chat "everyone" is the person on their other devices: the form and its outcome go everywhere.
    const everywhere = (card: CardReply): CardActionReply => ({ ...card, everyone: card });
    const form = (problem: string) => everywhere(connectCard({ askOrg, problem, note: this.note }));
    if (!caller.aadObjectId || !scope.tenantId)
      return refusalCard(
        "I can't tell who you are",
        'Teams did not say which Microsoft 365 account sent this. Try again from the Teams app.',
      );
    // The size before anything else is done with the value (a 60,000-character "token" is not one).
    const field = (id: string) => (dataString(data[id], 1_000) ?? '').trim();
    const token = { name: field(CONNECT_INPUTS.tokenName), value: field(CONNECT_INPUTS.tokenValue) };
    if (!token.name || !token.value || token.name.length > 200 || token.value.length > 500)
      return form('Enter both the token name and the token.');
    if (askOrg) {
      orgId = orgs.allowedOrg(field(CONNECT_INPUTS.orgId));
      if (!orgId)
        return form("That organisation isn't one this billbridge may use. Check the organisation id in BILL (Settings › Company profile).");
    }
    if (!orgId) return privately(errorReply(new Error('no organisation'), { correlationId: click.correlationId }));
    const ref = { tenantId: scope.tenantId, aadObjectId: caller.aadObjectId, orgId };
    const previous = await this.links.get(ref);
    const person = personCredentials({ ...ref, token });
    const audit = (result: 'ok' | 'refused' | 'error', detail?: Record<string, string>) =>
      auditAdmin(this.deps.audit, click, 'approvals.connect', result, orgId, detail);
    // Each attempt signs in to BILL: a person gets a few an hour, and waits after a refused one.
    const turn = await this.deps.attempts.take(person.owner);
    if (!turn.allowed) {
      await audit('refused', { reason: turn.why === 'cooldown' ? 'connect cooldown' : 'connect attempts per hour' }).catch(() => undefined);
      const seconds = Math.ceil(turn.retryInMs / 1000);
      log.info({ orgId, why: turn.why, retryInS: seconds }, 'connect attempt refused before BILL: too soon or too many');
      const at = clockTime(clock.now() + turn.retryInMs, this.deps.fmt);
      const wait = turn.retryInMs < 120_000 ? `${seconds} s` : `${Math.ceil(turn.retryInMs / 60_000)} min`;
      const tried = turn.why === 'cooldown' ? 'BILL did not accept the last token' : 'You have tried to connect several times this hour';
      return form(`${tried}. To protect the sign-ins everyone shares, try again at ${at} (in ${wait}).`);
    }
    let billUserId: string;
    try {
      // A fresh check: not the refusal a slot of this very token kept (for an hour, see sessions.ts).
      bill.forgetRefusedAs(orgId, person);
      const who = await bill.orgAs(orgId, person, { priority: 'interactive' }).whoami();
      if (who.organizationId && who.organizationId !== orgId)
        throw new BillApiError({ category: 'credentials', status: 200, message: 'signed in to another organisation' });
      billUserId = who.userId;
    } catch (err) {
      await bill.releaseAs(orgId, person).catch(() => undefined);
      if (err instanceof BillApiError && err.category === 'credentials') {
        await this.deps.attempts.refused(person.owner);
        await audit('refused', { reason: 'BILL refused the token' }).catch(() => undefined);
        log.info({ orgId }, 'approver link refused: BILL did not accept the token');
        return form(
          'BILL did not accept that token for this organisation. Check you copied the whole token and its exact name, then try again.',
        );
      }
      throw err;
    }
    await this.links.put({
      ...ref,
      billUserId,
      token,
      teamsUserId: caller.id,
      displayName: caller.name,
      reference: click.reference,
      digestTime: previous?.digestTime,
      digestSince: previous?.digestSince,
    });
    await auditOrUndo(audit('ok', { billUser: shortId(billUserId), replaced: previous ? 'yes' : 'no' }), async () => {
      await (previous ? this.links.put(previous) : this.links.remove(ref)).catch(() => undefined);
      await bill.releaseAs(orgId, person);
    });
    if (previous && (previous.token.name !== token.name || previous.token.value !== token.value))
      await this.release(previous).catch(() => undefined);
    log.info({ orgId, billUser: shortId(billUserId), replaced: !!previous }, 'approver linked to BILL');
    return everywhere(connectedCard({ billUserId, orgId, replaced: !!previous, note: this.note }));
  }
}

/** Says something to the clicker only; the card stays as everyone sees it. */
function privately(reply: CardReply): CardActionReply {
  return { ...reply, privateReply: true };
}

function isApprover(state: ApprovalCardState, caller: Caller): boolean {
  return !!caller.aadObjectId && caller.aadObjectId.toLowerCase() === state.approver.aadObjectId;
}

function sameConversation(state: ApprovalCardState, scope: ConversationScope): boolean {
  return state.tenantId === (scope.tenantId ?? '').toLowerCase() && state.conversationId === conversationOf(scope.conversationId);
}

function readComment(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  // eslint-disable-next-line no-control-regex -- control characters are what this replaces (a comment is one line in BILL)
  const flat = value.replace(/[\u0000-\u001F\u007F]+/g, ' ').trim();
  return flat === '' ? undefined : flat.slice(0, MAX_DECISION_COMMENT);
}

/** The approvals card verbs' handlers: "approvals are off" without SECRETS_KEY; a failed click's error card to the clicker alone. */
export function approvalCardActions(approvals: Approvals | undefined): Record<string, CardActionHandler> {
  const guarded =
    (fn: (a: Approvals, ctx: CardActionContext) => Promise<CardActionReply>): CardActionHandler =>
    async (ctx) => {
      if (!approvals) return privately(approvalsOffCard());
      try {
        return await fn(approvals, ctx);
      } catch (err) {
        const errName = errorName(err);
        ctx.log.warn({ verb: ctx.data.verb, err: errorMessage(err), errName }, 'approvals card action failed');
        return privately(errorReply(err, { correlationId: ctx.correlationId }));
      }
    };
  return {
    [APPROVAL_VERBS.connect]: guarded((a, ctx) => a.connect(ctx)),
    [APPROVAL_VERBS.approve]: guarded((a, ctx) => a.decide(ctx, 'APPROVE')),
    [APPROVAL_VERBS.deny]: guarded((a, ctx) => a.decide(ctx, 'DENY')),
    [APPROVAL_VERBS.view]: guarded((a, ctx) => a.view(ctx)),
  };
}
