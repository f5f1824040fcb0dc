// Approval cards: connecting a person's own BILL sign-in, the bills waiting for their approval (with Approve / Deny in
// their own view, read-only for everyone else), and the outcome of each decision. Pure: data in, card out.
import type { ApprovalCardBill, ApprovalCardState } from './cardRecords.js';
import {
  adaptiveCard,
  clipped,
  container,
  escapeMarkdown,
  executeAction,
  footer,
  keepTogether,
  MAX_NOTE,
  plainText,
  shortRef,
  subtitle,
  text,
  title,
  type CardElement,
  type CardReply,
} from '../../cards/card.js';
import { calendarDate, clockTime, dueShort, type FormatOptions } from '../../cards/format.js';
import { count, moneyTotal } from '../../cards/words.js';

/** Card verbs of the approvals feature; `view` is the Universal Actions refresh: each listed user's own view of a shared card. */
export const APPROVAL_VERBS = {
  connect: 'approvals.connect',
  approve: 'approvals.approve',
  deny: 'approvals.deny',
  view: 'approvals.view',
} as const;

/** Bills on one card (the soonest due); the rest are counted. Keeps the card well under 40 KB. */
export const MAX_CARD_BILLS = 10;
/** Longest comment sent to BILL with a decision. */
export const MAX_DECISION_COMMENT = 500;
export const CONNECT_INPUTS = { tokenName: 'billTokenName', tokenValue: 'billTokenValue', orgId: 'billOrgId' } as const;

/** The id of a bill's comment box on an approval card (inputs come back merged into the click's data). */
export const commentInputId = (row: number): string => `comment_${row}`;

const PRIVACY =
  'billbridge keeps the token encrypted, uses it only to show and decide your approvals, never shows it again, and forgets it when you type **disconnect**. Sync tokens cannot make payments.';

/** `connect` in a personal chat: a sync token's steps and masked inputs, the org id (`askOrg`), a refused try (never what was typed). */
export function connectCard(opts: { askOrg: boolean; problem?: string; connected?: boolean; note?: string }): CardReply {
  const body: CardElement[] = [
    title('Connect your BILL account'),
    text(
      "Approvals from Teams run **as you** in BILL, so BILL records you as the approver and applies your organisation's approval policy. billbridge signs in with a BILL sync token of yours:",
    ),
    text(
      "1. In BILL, open **Settings › Apps › Tokens** and select **New**.\n2. Give the token a name, for example *Teams approvals*, and save.\n3. Enter the token's name and the token BILL shows you below.",
    ),
  ];
  if (opts.connected) body.push(text('You are already connected. A new token replaces the one billbridge has.', { subtle: true }));
  if (opts.problem) body.push(container([text(opts.problem, { weight: 'Bolder' })], { style: 'attention' }));
  // Every input is required; the token's name and value are masked.
  const input = (id: string, label: string, maxLength: number, more: Record<string, string>): CardElement => {
    return { type: 'Input.Text', id, label, isRequired: true, errorMessage: `Enter the ${label.toLowerCase()}`, maxLength, ...more };
  };
  const masked = { style: 'Password' };
  const errorMessage = 'Enter the BILL organisation id (it starts with 008)';
  if (opts.askOrg) body.push(input(CONNECT_INPUTS.orgId, 'BILL organisation id', 64, { placeholder: '008…', errorMessage }));
  body.push(
    input(CONNECT_INPUTS.tokenName, 'Token name', 200, masked),
    input(CONNECT_INPUTS.tokenValue, 'Token', 500, masked),
    footer([PRIVACY, opts.note].filter(Boolean).join(' · ')),
  );
  return adaptiveCard(body, {
    summary: 'Connect your BILL account: create a sync token in BILL (Settings › Apps › Tokens) and enter it here.',
    actions: [executeAction('Connect', { verb: APPROVAL_VERBS.connect })],
  });
}

/** A heading and paragraphs, then the footnotes that are set on one footer line: the approvals feature's notices. */
function plainCard(heading: string, paragraphs: string | string[], summary: string, ...footnotes: Array<string | undefined>): CardReply {
  const body = [title(heading), ...[paragraphs].flat().map((p) => text(p))];
  if (footnotes.some(Boolean)) body.push(footer(footnotes.filter(Boolean).join(' · ')));
  return adaptiveCard(body, { summary });
}

/** `connect` anywhere but a personal chat: no form, no secrets here. */
export function connectElsewhereCard(typedArguments: boolean): CardReply {
  const paragraphs = [
    'Your BILL sign-in is yours alone: open a personal chat with me and type **connect** there. I never collect it in a channel or group chat.',
  ];
  if (typedArguments)
    paragraphs.push(
      "If you typed a token in this message, delete that token in BILL (Settings › Apps › Tokens) and create a new one: it is now in this conversation's history.",
    );
  return plainCard('Connect in a personal chat', paragraphs, 'Do this in a personal chat with me: type connect there.');
}

/** `connect` with words after it in a personal chat: never used, and a warning. */
export function tokenTypedCard(): CardReply {
  return plainCard(
    "Don't type your token in a message",
    "I did not use what you typed. Because it is now in this chat's history, delete that token in BILL (Settings › Apps › Tokens), create a new one, and enter it in the form I show when you type **connect** alone.",
    "Don't type your token in a message: type connect alone and use the form.",
  );
}

export function connectedCard(opts: { billUserId: string; orgId: string; replaced: boolean; note?: string }): CardReply {
  return plainCard(
    'Connected to BILL',
    [
      `${opts.replaced ? 'Your new token replaces the old one. ' : ''}Approvals you make from Teams now run as you in BILL (user ${shortRef(opts.billUserId)} in organisation ${escapeMarkdown(opts.orgId)}).`,
      'Type **approvals** to see the bills waiting for you, or **approvals digest daily 08:30** for a morning summary.',
    ],
    'Connected to BILL: approvals now run as you. Type approvals to see what is waiting.',
    'Type **disconnect** to remove the link at any time.',
    opts.note,
  );
}

export function disconnectedCard(orgIds: string[]): CardReply {
  if (orgIds.length === 0)
    return plainCard('Nothing to disconnect', 'Your BILL account is not connected here.', 'Your BILL account is not connected.');
  return plainCard(
    'Disconnected from BILL',
    `billbridge deleted your token and signed your session out of BILL (${orgIds.map(escapeMarkdown).join(', ')}). If you made the token only for billbridge, delete it in BILL too (Settings › Apps › Tokens).`,
    'Disconnected from BILL: your token is deleted from billbridge.',
  );
}

/** Without SECRETS_KEY the feature is off: nothing about people's sign-ins could be kept safely. */
export function approvalsOffCard(): CardReply {
  return plainCard(
    'Approvals are off',
    "Approving bills from Teams needs an encryption key for approvers' BILL tokens. Ask your billbridge administrator to set SECRETS_KEY.",
    'Approvals are off in this billbridge: an administrator needs to set SECRETS_KEY.',
  );
}

/** Several linked organisations and a chat bound to none: pick one. */
export function chooseOrgCard(orgIds: string[]): CardReply {
  return adaptiveCard([title('Which BILL organisation?'), text('You are connected to more than one. Pick one:')], {
    summary: 'You are connected to several BILL organisations; pick one.',
    actions: orgIds.slice(0, 5).map((o) => executeAction(o, { verb: 'run', command: `approvals ${o}` })),
  });
}

export function nothingWaitingCard(opts: { name: string; personal: boolean; asOf: number; fmt: FormatOptions; note?: string }): CardReply {
  const who = opts.personal ? 'you' : clipped(opts.name);
  return plainCard(
    'Nothing waiting for approval',
    `No bills are waiting for ${who} in BILL right now.`,
    `No bills are waiting for ${opts.personal ? 'your' : opts.name + "'s"} approval.`,
    `As of ${clockTime(opts.asOf, opts.fmt)}`,
    opts.note,
  );
}

export interface ApprovalCardOptions {
  state: ApprovalCardState;
  /** The approver's own view: comment boxes and Approve / Deny on undecided bills. */
  actionable: boolean;
  fmt: FormatOptions;
  /** yyyy-MM-dd in BOT_TIMEZONE. */
  today: string;
  /** Signs a click's (verb, card, bill); the handler refuses data whose signature does not match. */
  sign: (verb: string, cardId: string, billId: string) => string;
  /** A line above the list (a refusal, or what just happened): markdown, so any name in it is escaped by its author. */
  notice?: { text: string; tone: 'attention' | 'warning' | 'good' };
  note?: string;
}

function billLines(b: ApprovalCardBill, i: number, o: ApprovalCardOptions): CardElement[] {
  const money = moneyTotal([{ amount: b.amount, currency: b.currency }], o.fmt.locale);
  const invoice = b.invoiceNumber ? `Invoice ${keepTogether(clipped(b.invoiceNumber))}` : `Bill ${shortRef(b.billId)}`;
  const items: CardElement[] = [
    text(`**${clipped(b.vendorName)}** · ${money}`, { separator: i > 0 }),
    subtitle(`${invoice} · due ${calendarDate(b.dueDate, o.fmt.locale)} (${dueShort(b.dueDate, o.today)})`),
  ];
  if (b.decision) {
    const verb = b.decision.action === 'APPROVE' ? 'Approved' : 'Denied';
    const when = clockTime(b.decision.at, o.fmt);
    items.push(text(`${verb} by ${clipped(b.decision.byName)} at ${when}`, { weight: 'Bolder' }));
    if (b.decision.comment) items.push(text(`“${clipped(b.decision.comment, MAX_NOTE)}”`, { subtle: true }));
  } else if (b.gone) {
    items.push(text(`No longer waiting for ${clipped(o.state.approver.name)} (decided in BILL or passed on)`));
  } else if (o.actionable) {
    const data = (verb: string) => ({ verb, card: o.state.id, bill: b.billId, sig: o.sign(verb, o.state.id, b.billId) });
    items.push(
      { type: 'Input.Text', id: commentInputId(i), placeholder: 'Comment for BILL (optional)', maxLength: MAX_DECISION_COMMENT },
      {
        type: 'ActionSet',
        actions: [executeAction('Approve', data(APPROVAL_VERBS.approve)), executeAction('Deny', data(APPROVAL_VERBS.deny))],
      },
    );
  }
  return items;
}

/** The bills waiting for one approver; outside a personal chat Teams asks for the approver's own view (refresh.userIds). */
export function approvalsCard(o: ApprovalCardOptions): CardReply {
  const { state } = o;
  const personal = state.kind === 'personal';
  const name = clipped(state.approver.name);
  const waiting = state.bills.filter((b) => !b.decision && !b.gone);
  const body: CardElement[] = [
    title(personal || o.actionable ? 'Waiting for your approval' : `Waiting for ${name}'s approval`),
    subtitle(
      waiting.length === 0
        ? 'Everything on this card is decided.'
        : `${count(waiting.length, 'bill')} · ${moneyTotal(
            waiting.map((b) => ({ amount: b.amount, currency: b.currency })),
            o.fmt.locale,
          )}${state.more > 0 ? ` · ${state.more} more in BILL` : ''}`,
    ),
  ];
  if (o.notice) body.push(container([text(o.notice.text, { weight: 'Bolder' })], { style: o.notice.tone }));
  state.bills.forEach((b, i) => body.push(container(billLines(b, i, o))));
  const who = o.actionable
    ? 'Decisions run as you in BILL, which records you as the approver.'
    : `Only ${name} can approve or deny these, as themselves in BILL.`;
  body.push(footer([who, `As of ${clockTime(o.state.updatedAt, o.fmt)}`, o.note].filter(Boolean).join(' · ')));
  const summary =
    waiting.length === 0
      ? `Approvals for ${state.approver.name}: all decided.`
      : `${count(waiting.length, 'bill')} waiting for ${personal || o.actionable ? 'your' : `${state.approver.name}'s`} approval.`;
  const reply = adaptiveCard(body, { summary });
  if (!personal && waiting.length > 0) {
    // User-specific view: Teams asks the bot for the approver's card; everyone else keeps this read-only one.
    reply.card.refresh = {
      action: {
        type: 'Action.Execute',
        title: 'Refresh',
        verb: APPROVAL_VERBS.view,
        data: { verb: APPROVAL_VERBS.view, card: state.id, sig: o.sign(APPROVAL_VERBS.view, state.id, '') },
      },
      userIds: [state.approver.teamsUserId],
    };
  }
  return reply;
}

/** A click that changes nothing, said to the clicker only. The heading is plain text (it may name a vendor); `why` is markdown. */
export function refusalCard(heading: string, why: string): CardReply & { privateReply: true } {
  // A heading may name a vendor or customer as BILL has it, at any length: cut short as list cards do.
  return { ...plainCard(clipped(heading), why, `${heading}. ${plainText(why)}`), privateReply: true };
}

/** `approvals digest ...`: what is set now; `time` is read in `fmt.timeZone`. */
export function digestSettingCard(opts: {
  time: string | undefined;
  changed: boolean;
  /** yyyy-MM-dd of the next digest in the zone. */ nextDate?: string;
  fmt: FormatOptions;
}): CardReply {
  if (!opts.time)
    return plainCard(
      opts.changed ? 'Approvals digest off' : 'No approvals digest',
      'Type **approvals digest daily 08:30** to get a personal message each morning with the bills waiting for your approval (only when there are some).',
      opts.changed ? 'Your daily approvals digest is off.' : 'No approvals digest is set.',
    );
  const next = opts.nextDate ? ` The next one is due ${calendarDate(opts.nextDate, opts.fmt.locale)} at ${opts.time}.` : '';
  return plainCard(
    opts.changed ? 'Approvals digest set' : 'Your approvals digest',
    `Every day at **${opts.time}** (${escapeMarkdown(opts.fmt.timeZone)}) I send you the bills waiting for your approval here — only on days when some are.${next}`,
    `Daily approvals digest at ${opts.time} (${opts.fmt.timeZone}).`,
    'Type **approvals digest off** to stop it.',
  );
}
